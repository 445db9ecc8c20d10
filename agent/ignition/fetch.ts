/**
 * Turns a {@link Resource} into bytes: fetch (data:, http(s) with retries and
 * backoff, bundle:), decompress, then verify the hash over the decompressed bytes,
 * as Ignition does. Every failure is an {@link AgentError} naming the resource's JSON path.
 */
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { gunzip } from "node:zlib";
import { promisify } from "node:util";
import { BodyTooLargeError, readBodyLimited, AgentError, AgentErrorCode, errorMessage } from "../common";
import { bundlePath, urlScheme } from "./checks";
import { decodeDataUrl } from "./data-url";
import type { Resource } from "./model";

const gunzipAsync = promisify(gunzip);

/** HTTP retry policy; the defaults are Ignition's, except that attempts are bounded. */
export interface RetryPolicy {
  /** @default 8 */
  readonly attempts: number;
  /** @default 100 */
  readonly initialDelayMs: number;
  /** @default 5000 */
  readonly maxDelayMs: number;
  /** How long to wait for response headers per attempt. @default 10000 */
  readonly headerTimeoutMs: number;
  /**
   * How long one attempt may take in all, body included: a server that
   * trickles bytes is cut off here, not kept for ever. @default 600000
   */
  readonly attemptTimeoutMs: number;
  /** The largest body (and, for gzip, the largest decompressed file) accepted. @default 1 GiB */
  readonly maxBytes: number;
}

/** Where and how resources may be fetched from. */
export interface FetchOptions {
  /** Directory that `bundle:///…` URLs resolve against. */
  readonly bundleRoot?: string;
  /** Allow http(s) sources without `verification.hash`. @default false */
  readonly allowUnverifiedHttp?: boolean;
  readonly retry?: Partial<RetryPolicy>;
  /** Injected for tests; defaults to a real timer. */
  readonly sleep?: (ms: number) => Promise<void>;
}

const DEFAULT_RETRY: RetryPolicy = {
  attempts: 8,
  initialDelayMs: 100,
  maxDelayMs: 5000,
  headerTimeoutMs: 10_000,
  attemptTimeoutMs: 600_000,
  maxBytes: 1024 * 1024 * 1024,
};

/** Fetches, decompresses and verifies one resource. A resource without a source yields undefined. */
export async function resolveResource(r: Resource, options: FetchOptions = {}): Promise<Buffer | undefined> {
  if (r.source === undefined) return undefined;
  const where = `${r.at}.source`;
  const scheme = urlScheme(r.source);
  const policy = { ...DEFAULT_RETRY, ...options.retry };
  let raw: Buffer;
  switch (scheme) {
    case "data":
      raw = r.inline ?? decodeDataUrl(r.source).data;
      break;
    case "http":
    case "https":
      if (r.hash === undefined && !options.allowUnverifiedHttp) {
        throw new AgentError(
          AgentErrorCode.InvalidInput,
          `${where}: refusing ${r.source} without verification.hash (set allowUnverifiedHttp to permit unverified downloads)`,
        );
      }
      raw = await fetchHttp(r, policy, options.sleep ?? defaultSleep);
      break;
    case "bundle": {
      const rel = bundlePath(r.source);
      if (options.bundleRoot === undefined || rel === undefined) {
        throw new AgentError(
          AgentErrorCode.FetchFailed,
          `${where}: ${r.source} needs a content bundle, and none was given`,
        );
      }
      try {
        raw = await readFile(join(options.bundleRoot, ...rel.split("/")));
      } catch (e) {
        throw new AgentError(
          AgentErrorCode.FetchFailed,
          `${where}: cannot read ${r.source} from the bundle: ${errorMessage(e)}`,
        );
      }
      break;
    }
    default:
      throw new AgentError(
        AgentErrorCode.Unsupported,
        `${where}: the "${scheme}" scheme is not supported by the Windows agent`,
      );
  }
  let data = raw;
  if (r.compression === "gzip") {
    try {
      data = await gunzipAsync(raw, { maxOutputLength: policy.maxBytes });
    } catch (e) {
      throw new AgentError(AgentErrorCode.FetchFailed, `${where}: cannot gunzip: ${errorMessage(e)}`);
    }
  }
  if (r.hash !== undefined) {
    const calculated = createHash(r.hash.function).update(data).digest("hex");
    if (calculated !== r.hash.hex) {
      throw new AgentError(
        AgentErrorCode.HashMismatch,
        `${r.at}.verification.hash: hash mismatch: calculated ${r.hash.function}-${calculated}, expected ${r.hash.function}-${r.hash.hex}`,
      );
    }
  }
  return data;
}

function defaultSleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// Ignition's rule: a 5xx or no response headers in time is retried with
// exponential backoff; any other answer is final, success or not.
async function fetchHttp(r: Resource, policy: RetryPolicy, sleep: (ms: number) => Promise<void>): Promise<Buffer> {
  const url = r.source ?? "";
  const headers: Record<string, string> = { "user-agent": "winfleet-agent", "accept-encoding": "identity" };
  for (const h of r.httpHeaders) {
    if (h.value === undefined) delete headers[h.name.toLowerCase()];
    else headers[h.name] = h.value;
  }
  let delay = policy.initialDelayMs;
  let last = "";
  for (let attempt = 1; attempt <= policy.attempts; attempt++) {
    const abort = new AbortController();
    let headersIn = false;
    const timer = setTimeout(() => abort.abort(), policy.headerTimeoutMs);
    const deadline = setTimeout(() => abort.abort(), policy.attemptTimeoutMs);
    try {
      const response = await fetch(url, { headers, signal: abort.signal, redirect: "follow" });
      clearTimeout(timer);
      headersIn = true;
      if (response.status >= 500) {
        last = `HTTP ${response.status}`;
        await response.body?.cancel();
      } else if (!response.ok) {
        await response.body?.cancel();
        throw new AgentError(AgentErrorCode.FetchFailed, `${r.at}.source: GET ${url} answered HTTP ${response.status}`);
      } else {
        return await readBodyLimited(response, policy.maxBytes);
      }
    } catch (e) {
      if (e instanceof AgentError) throw e;
      if (e instanceof BodyTooLargeError)
        throw new AgentError(AgentErrorCode.FetchFailed, `${r.at}.source: GET ${url}: ${e.message}`);
      const late = headersIn
        ? `no complete answer within ${policy.attemptTimeoutMs} ms`
        : `no response headers within ${policy.headerTimeoutMs} ms`;
      last = abort.signal.aborted ? late : errorMessage(e);
    } finally {
      clearTimeout(timer);
      clearTimeout(deadline);
    }
    if (attempt < policy.attempts) {
      await sleep(delay);
      delay = Math.min(delay * 2, policy.maxDelayMs);
    }
  }
  throw new AgentError(
    AgentErrorCode.FetchFailed,
    `${r.at}.source: GET ${url} failed after ${policy.attempts} attempts: ${last}`,
  );
}
