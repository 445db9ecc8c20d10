/**
 * A fake Kubernetes API server for the reporter's tests: it serves only the
 * endpoints a node uses (reports, and the drain's reads and cordon of a node
 * with no pods), checks verbs, paths, content types and the node's token, and
 * validates every body against the Kubernetes OpenAPI schema (kubernetes-models:
 * types and required fields).
 */
import { writeFileSync } from "node:fs";
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { Event } from "kubernetes-models/v1/Event";
import { Node } from "kubernetes-models/v1/Node";

/** The node the server accepts requests for, and its token. */
export const NODE = "win-node-1";
export const TOKEN = "node-token-123";

/** What the server accepted, and what it refused. */
export interface Received {
  readonly events: Record<string, unknown>[];
  readonly nodePatches: Record<string, unknown>[];
  readonly statusPatches: Record<string, unknown>[];
  /** Each cordon (true) and uncordon (false) of the Node, in order. */
  readonly cordons: boolean[];
  readonly refused: string[];
}

/** A fake API server on `port` (0: any). */
export async function apiServer(
  port = 0,
  node = NODE,
): Promise<{ server: Server; port: number; got: Received; close: () => Promise<void> }> {
  const got: Received = { events: [], nodePatches: [], statusPatches: [], cordons: [], refused: [] };
  const names = new Set<string>();
  const refuse = (res: ServerResponse, code: number, why: string): void => {
    got.refused.push(why);
    res.writeHead(code, { "content-type": "application/json" }).end(JSON.stringify({ kind: "Status", message: why }));
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.headers.authorization !== `Bearer ${TOKEN}`) return refuse(res, 401, "no node credentials");
      // The drain's reads: its own Node, and the pods bound to it (none here).
      if (req.method === "GET") {
        const answer =
          req.url === `/api/v1/nodes/${node}`
            ? { apiVersion: "v1", kind: "Node", metadata: { name: node }, spec: { unschedulable: got.cordons.at(-1) } }
            : req.url?.startsWith(`/api/v1/pods?fieldSelector=spec.nodeName%3D${node}`)
              ? { apiVersion: "v1", kind: "PodList", metadata: {}, items: [] }
              : undefined;
        if (!answer) return refuse(res, 404, `GET ${req.url} is not something a node reads`);
        return res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(answer));
      }
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>;
      } catch {
        return refuse(res, 400, "body is not JSON");
      }
      const type = req.headers["content-type"];
      try {
        if (req.method === "POST" && req.url === "/api/v1/namespaces/default/events" && type === "application/json") {
          new Event(body as unknown as ConstructorParameters<typeof Event>[0]).validate();
          const name = (body.metadata as { name: string }).name;
          if (names.has(name)) return refuse(res, 409, "exists");
          names.add(name);
          got.events.push(body);
        } else if (
          req.method === "PATCH" &&
          req.url === `/api/v1/nodes/${node}` &&
          type === "application/merge-patch+json" &&
          body.spec !== undefined
        ) {
          // A cordon sets spec.unschedulable, an uncordon removes it (null), and nothing else.
          const spec = body.spec as { unschedulable?: boolean | null };
          if (Object.keys(body).join() !== "spec" || Object.keys(spec).join() !== "unschedulable")
            return refuse(res, 422, `a cordon changes spec.unschedulable alone: ${JSON.stringify(body)}`);
          got.cordons.push(spec.unschedulable === true);
        } else if (
          req.method === "PATCH" &&
          req.url === `/api/v1/nodes/${node}` &&
          type === "application/merge-patch+json"
        ) {
          // null deletes an annotation in a merge patch; the rest must be a valid (partial) Node.
          const annotations = Object.fromEntries(
            Object.entries((body.metadata as { annotations: Record<string, unknown> }).annotations).filter(
              ([, v]) => v !== null,
            ),
          ) as Record<string, string>;
          new Node({ metadata: { annotations } }).validate();
          got.nodePatches.push(body);
        } else if (
          req.method === "PATCH" &&
          req.url === `/api/v1/nodes/${node}/status` &&
          type === "application/strategic-merge-patch+json"
        ) {
          new Node(body).validate();
          got.statusPatches.push(body);
        } else return refuse(res, 404, `${req.method} ${req.url} (${String(type)}) is not something a node does`);
      } catch (e) {
        return refuse(res, 422, `invalid body: ${(e as Error).message}`);
      }
      res
        .writeHead(req.method === "POST" ? 201 : 200, { "content-type": "application/json" })
        .end(JSON.stringify(body));
    });
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  const bound = (server.address() as AddressInfo).port;
  return { server, port: bound, got, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** A kubeconfig for the server on `port`, written into `dir`. */
export function kubeconfig(port: number, dir: string): string {
  const file = join(dir, `kubeconfig-${port}`);
  writeFileSync(
    file,
    `apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:${port}\n    insecure-skip-tls-verify: true\nusers:\n- name: node\n  user:\n    token: ${TOKEN}\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: node\ncurrent-context: x\n`,
  );
  return file;
}
