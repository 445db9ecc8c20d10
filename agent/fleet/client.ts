/**
 * Talking to a running fleet manager over its loopback HTTP API: status,
 * the event stream, a new spec to roll out, shutdown.
 */
import { request } from "node:http";
import { AgentError, AgentErrorCode } from "../common";
import type { FleetEvent, FleetStatus } from "./manager";
import type { Owner } from "./ownership";
import type { RolloutResult } from "./rollout";
import type { FleetSpec } from "./spec";

function call<T>(owner: Owner, method: string, path: string, body?: unknown): Promise<T> {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = request(
      {
        host: "127.0.0.1",
        port: owner.port,
        method,
        path,
        headers: { authorization: `Bearer ${owner.token}`, ...(data ? { "content-type": "application/json" } : {}) },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (text += c));
        res.on("end", () => {
          const parsed = text ? (JSON.parse(text) as T & { error?: string }) : ({} as T & { error?: string });
          if ((res.statusCode ?? 500) >= 400)
            reject(
              new AgentError(
                AgentErrorCode.InvalidInput,
                `the fleet manager answered ${String(res.statusCode)}: ${parsed.error ?? text}`,
              ),
            );
          else resolve(parsed);
        });
      },
    );
    req.on("error", (e) =>
      reject(
        new AgentError(
          AgentErrorCode.FetchFailed,
          `cannot reach the fleet manager on 127.0.0.1:${owner.port}: ${e.message}`,
        ),
      ),
    );
    req.end(data);
  });
}

/** The running fleet's status. */
export function fleetStatus(owner: Owner): Promise<FleetStatus> {
  return call(owner, "GET", "/api/status");
}

/** Rolls `spec` out and resolves with the result (a long request). */
export function applySpec(owner: Owner, spec: FleetSpec): Promise<RolloutResult> {
  return call(owner, "POST", "/api/apply", spec);
}

/** Asks the manager to stop every agent and exit. */
export function shutdownFleet(owner: Owner): Promise<unknown> {
  return call(owner, "POST", "/api/shutdown");
}

/** Follows the event stream until the returned function is called. */
export function followEvents(
  owner: Owner,
  onEvent: (e: FleetEvent | { type: "snapshot"; status: FleetStatus }) => void,
): () => void {
  const req = request({ host: "127.0.0.1", port: owner.port, path: "/api/events" }, (res) => {
    let buffer = "";
    res.setEncoding("utf8");
    res.on("data", (chunk: string) => {
      buffer += chunk;
      let end: number;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        for (const line of frame.split("\n"))
          if (line.startsWith("data: ")) onEvent(JSON.parse(line.slice(6)) as FleetEvent);
      }
    });
  });
  req.on("error", () => undefined); // the stream ends with the manager
  req.end();
  return () => req.destroy();
}
