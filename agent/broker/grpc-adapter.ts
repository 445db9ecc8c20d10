/**
 * Bridges the generated protobuf-es descriptors to grpc-js: a service definition
 * whose (de)serialisers are the generated codecs, so handlers and clients are
 * typed by the `.proto` files and nothing is declared twice.
 */
import * as grpc from "@grpc/grpc-js";
import { type DescMessage, type DescService, create, fromBinary, toBinary } from "@bufbuild/protobuf";

/** The same bytes as a Buffer, not a copy. */
function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** A grpc-js service definition keyed by the proto method names (`Start`, `Wait`…). */
export function grpcService(service: DescService): grpc.ServiceDefinition {
  const definition: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  for (const m of service.methods) {
    const codec = (schema: DescMessage) => ({
      // create() accepts both messages and plain init objects, so callers may pass either; and a
      // handler may write bytes it encoded itself (process output does: one copy instead of three).
      serialize: (msg: unknown) =>
        asBuffer(msg instanceof Uint8Array ? msg : toBinary(schema, create(schema, msg as never))),
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
