/**
 * A client of the broker built from its .proto files by @grpc/proto-loader: a
 * different code path from the server's generated codecs, as an old wins
 * client would be. Used over Unix sockets (test/broker) and Windows named
 * pipes (test/wine), so the .proto directory is given, not found.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";

/** A raw client: every method of its service by name. */
export type RawClient = grpc.Client & Record<string, (...a: unknown[]) => unknown>;

/** The broker's services as proto-loader reads them from `protoDir`. */
export interface WinsProtos {
  readonly packageDefinition: protoLoader.PackageDefinition;
  /** A raw client for a wins service on `socket` (a socket path, or a pipe on Windows). */
  readonly winsClient: (service: string, socket: string) => RawClient;
  /** A raw client for the tunnel service. */
  readonly tunnelRawClient: (socket: string) => RawClient;
}

/** Loads every broker proto under `protoDir`. */
export function winsProtos(protoDir: string): WinsProtos {
  const packageDefinition = protoLoader.loadSync(
    [
      "wins/application.proto",
      "wins/host.proto",
      "wins/network.proto",
      "wins/hns.proto",
      "wins/route.proto",
      "wins/process.proto",
      "winfleet/proxy.proto",
    ],
    { includeDirs: [protoDir], keepCase: true, longs: String, enums: String, defaults: true, oneofs: true },
  );
  const loaded = grpc.loadPackageDefinition(packageDefinition) as unknown as {
    wins: Record<string, grpc.ServiceClientConstructor>;
    winfleet: { proxy: { v1: Record<string, grpc.ServiceClientConstructor> } };
  };
  const make = (Ctor: grpc.ServiceClientConstructor | undefined, what: string, socket: string): RawClient => {
    if (!Ctor) throw new Error(`no service ${what}`);
    return new Ctor(`unix:${socket}`, grpc.credentials.createInsecure()) as RawClient;
  };
  return {
    packageDefinition,
    winsClient: (service, socket) => make(loaded.wins[service], `wins.${service}`, socket),
    tunnelRawClient: (socket) => make(loaded.winfleet.proxy.v1.TunnelService, "TunnelService", socket),
  };
}

/** Calls a unary method, resolving with the response or rejecting with the ServiceError. */
export function call<T>(client: RawClient, method: string, req: unknown): Promise<T> {
  return new Promise((resolve, reject) => {
    (client[method] as (r: unknown, cb: (e: grpc.ServiceError | null, r: T) => void) => void).call(
      client,
      req,
      (e, r) => (e ? reject(e) : resolve(r)),
    );
  });
}

/** A Wait message as proto-loader decodes it (oneofs named in `Options`). */
export interface WaitMessage {
  StdOut?: Buffer;
  StdErr?: Buffer;
  ExitCode?: number;
  Options?: string;
}

/**
 * `prc run` as a wins client does it: Start `tool` (with its SHA1, and `args`),
 * hold a KeepAlive, Wait, and gather the output; `onStdout` may pause the
 * stream to read slowly. Resolves once the stream ends.
 */
export async function runThroughWins(
  client: RawClient,
  tool: string,
  onStdout?: (chunk: Buffer, wait: grpc.ClientReadableStream<WaitMessage>) => void,
  args: readonly string[] = [],
): Promise<{ out: Buffer; err: string; code: number }> {
  const checksum = createHash("sha1").update(readFileSync(tool)).digest("hex");
  const started = await call<{ Data: { Value: string } }>(client, "Start", {
    Path: tool,
    Checksum: checksum,
    Args: [...args],
  });
  const ka = (client.KeepAlive as (cb: () => void) => grpc.ClientWritableStream<unknown>).call(client, () => undefined);
  ka.write({ Data: started.Data });
  const wait = (client.Wait as (r: unknown) => grpc.ClientReadableStream<WaitMessage>).call(client, {
    Data: started.Data,
  });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  let code = -1;
  wait.on("data", (m: WaitMessage) => {
    if (m.Options === "StdOut" && m.StdOut) {
      out.push(m.StdOut);
      onStdout?.(m.StdOut, wait);
    }
    if (m.Options === "StdErr" && m.StdErr) err.push(m.StdErr);
    if (m.Options === "ExitCode") code = m.ExitCode ?? -1;
  });
  try {
    await new Promise<void>((resolve, reject) => {
      wait.on("end", resolve);
      wait.on("error", reject);
    });
  } finally {
    ka.end();
  }
  return { out: Buffer.concat(out), err: Buffer.concat(err).toString(), code };
}
