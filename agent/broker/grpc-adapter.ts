/**
 * Bridges the generated protobuf-es descriptors to grpc-js: a service definition
 * whose (de)serialisers are the generated codecs, so handlers and clients are
 * typed by the `.proto` files and nothing is declared twice.
 */
import * as grpc from "@grpc/grpc-js";
import { type DescMessage, type DescService, create, fromBinary, toBinary } from "@bufbuild/protobuf";

/** A grpc-js service definition keyed by the proto method names (`Start`, `Wait`…). */
export function grpcService(service: DescService): grpc.ServiceDefinition {
  const definition: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  for (const m of service.methods) {
    const codec = (schema: DescMessage) => ({
      // create() accepts both messages and plain init objects, so callers may pass either.
      serialize: (msg: unknown) => Buffer.from(toBinary(schema, create(schema, msg as never))),
      deserialize: (buf: Buffer) => fromBinary(schema, buf),
    });
    const input = codec(m.input);
    const output = codec(m.output);
    definition[m.name] = {
      path: `/${service.typeName}/${m.name}`,
      requestStream: m.methodKind === "client_streaming" || m.methodKind === "bidi_streaming",
      responseStream: m.methodKind === "server_streaming" || m.methodKind === "bidi_streaming",
      requestSerialize: input.serialize,
      requestDeserialize: input.deserialize,
      responseSerialize: output.serialize,
      responseDeserialize: output.deserialize,
      originalName: m.name,
    };
  }
  return definition;
}

/** A generic client class for `service` (methods named as in the proto). */
export function grpcClientClass(service: DescService): grpc.ServiceClientConstructor {
  return grpc.makeGenericClientConstructor(grpcService(service), service.typeName);
}
