/**
 * `winfleet-agent retarget`: what an upgrader pod does to move its host to a
 * new template or content. It fetches the content archive (from a file the pod
 * carries, or a URL — with the node's managed identity when asked), refuses
 * it unless its SHA-256 is the expected one, unpacks it beside the installed
 * content, and rewrites the agent config's `content`, `template` and
 * `templateVersion` in one atomic replace, keeping everything else (secrets
 * included). The running `serve` notices the changed config and applies it.
 */
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { copyFile, mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { parse as parseYaml } from "yaml";
import {
  writeFileAtomic,
  readBodyLimited,
  AgentError,
  AgentErrorCode,
  type DrainSettings,
  canonicalJson,
  errorMessage,
  untar,
} from "../common";
import { loadAgentConfig } from "./config";

/** Where the new content comes from. */
export type ArchiveSource =
  | { readonly kind: "file"; readonly path: string }
  | { readonly kind: "url"; readonly url: string; readonly auth: "none" | "managedIdentity"; readonly sas?: string };

/** A retarget request. */
export interface RetargetRequest {
  /** The agent config to rewrite. */
  readonly config: string;
  readonly template: string;
  readonly templateVersion: string;
  readonly archive: ArchiveSource;
  /** Lower-case hex. */
  readonly sha256: string;
  /** Fetches a URL (injected for tests); the default uses `fetch`. */
  readonly download?: (url: string, headers: Record<string, string>) => Promise<Buffer>;
  /** The pool's drain knobs, written into the agent config with the target (absent: left as they are). */
  readonly drain?: DrainSettings;
}

/** What retarget did. */
export interface RetargetResult {
  readonly content: string;
  readonly changed: boolean;
}

const IMDS_STORAGE =
  "http://169.254.169.254/metadata/identity/oauth2/token?api-version=2018-02-01&resource=https%3A%2F%2Fstorage.azure.com%2F";

/** The largest content archive, or token answer, accepted; a bundle of scripts and templates is far smaller. */
const MAX_DOWNLOAD_BYTES = 512 * 1024 * 1024;
/** How long one download may take in all, so a server trickling bytes cannot hold the upgrade. */
const DOWNLOAD_TIMEOUT_MS = 10 * 60 * 1000;

/**
 * GETs `url` into memory, at most `bounds.maxBytes`, within `bounds.timeoutMs`
 * in all; every failure is a FETCH_FAILED error naming the URL without its query (a SAS).
 */
export async function downloadBounded(
  url: string,
  headers: Record<string, string>,
  bounds = { maxBytes: MAX_DOWNLOAD_BYTES, timeoutMs: DOWNLOAD_TIMEOUT_MS },
): Promise<Buffer> {
  const shown = url.split("?")[0] ?? url;
  const signal = AbortSignal.timeout(bounds.timeoutMs);
  try {
    const res = await fetch(url, { headers, signal });
    if (!res.ok) {
      await res.body?.cancel().catch(() => undefined);
      throw new AgentError(AgentErrorCode.FetchFailed, `GET ${shown} answered ${res.status} ${res.statusText}`);
    }
    return await readBodyLimited(res, bounds.maxBytes);
  } catch (e) {
    if (e instanceof AgentError) throw e;
    const why = signal.aborted ? `no complete answer within ${bounds.timeoutMs} ms` : errorMessage(e);
    throw new AgentError(AgentErrorCode.FetchFailed, `GET ${shown}: ${why}`);
  }
}

async function storageHeaders(download: NonNullable<RetargetRequest["download"]>): Promise<Record<string, string>> {
  const token = JSON.parse((await download(IMDS_STORAGE, { Metadata: "true" })).toString("utf8")) as {
    access_token?: string;
  };
  if (!token.access_token)
    throw new AgentError(AgentErrorCode.FetchFailed, "the managed identity endpoint gave no access token");
  return { Authorization: `Bearer ${token.access_token}`, "x-ms-version": "2021-08-06" };
}

/** Moves the agent config to a new content archive and template. */
export async function retarget(req: RetargetRequest): Promise<RetargetResult> {
  if (!/^[0-9a-f]{64}$/.test(req.sha256))
    throw new AgentError(
      AgentErrorCode.InvalidInput,
      `--content-sha256 ${req.sha256}: expected 64 lower-case hex digits`,
    );
  await loadAgentConfig(req.config); // refuse to rewrite a config the agent would not read
  const root = dirname(req.config);
  const short = req.sha256.slice(0, 12);
  const archive = join(root, "downloads", `content-${short}.tgz`);
  const content = join(root, "content", short);
  await mkdir(dirname(archive), { recursive: true });
  if (!existsSync(join(content, ".complete"))) {
    const partial = `${archive}.partial`;
    try {
      if (req.archive.kind === "file") await copyFile(req.archive.path, partial);
      else {
        const download = req.download ?? ((u: string, h: Record<string, string>) => downloadBounded(u, h));
        const headers = req.archive.auth === "managedIdentity" ? await storageHeaders(download) : {};
        const url = req.archive.sas ? `${req.archive.url}?${req.archive.sas.replace(/^\?/, "")}` : req.archive.url;
        await writeFile(partial, await download(url, headers));
      }
    } catch (e) {
      await rm(partial, { force: true });
      if (e instanceof AgentError) throw e;
      throw new AgentError(AgentErrorCode.FetchFailed, `cannot fetch the content archive: ${errorMessage(e)}`);
    }
    const actual = createHash("sha256")
      .update(await readFile(partial))
      .digest("hex");
    if (actual !== req.sha256) {
      await rm(partial, { force: true });
      throw new AgentError(
        AgentErrorCode.HashMismatch,
        `the content archive has SHA-256 ${actual}, expected ${req.sha256}; nothing was changed`,
      );
    }
    await rename(partial, archive);
    const staging = `${content}.unpacking`;
    await rm(staging, { recursive: true, force: true });
    await mkdir(staging, { recursive: true });
    await untar(archive, staging);
    await writeFile(join(staging, ".complete"), "");
    await rm(content, { recursive: true, force: true });
    await rename(staging, content);
  }
  const current = parseYaml(await readFile(req.config, "utf8")) as Record<string, unknown>;
  const next = {
    ...current,
    content,
    template: req.template,
    templateVersion: req.templateVersion,
    ...(req.drain ? { drain: req.drain } : {}),
  };
  const changed =
    current.content !== content ||
    current.template !== req.template ||
    current.templateVersion !== req.templateVersion ||
    (req.drain !== undefined && canonicalJson(current.drain ?? null) !== canonicalJson(req.drain));
  if (changed) await writeFileAtomic(req.config, `${JSON.stringify(next, null, 2)}\n`, { mode: 0o600 });
  return { content, changed };
}
