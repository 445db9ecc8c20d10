/**
 * Collectors of the agent's own evidence, the same on every platform: status,
 * journal and recent runs' logs, the config with its secrets replaced, the
 * agent's log, the report queue, verify's drift list, the content bundle's
 * manifest and signature, and the versions of everything.
 */
import { existsSync } from "node:fs";
import { readFile, readdir, stat } from "node:fs/promises";
import { arch, release, type as osType } from "node:os";
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import { errorMessage, redactSecrets } from "../common";
import { rootedMapper } from "../ignition";
import { stateDir, readStatus, verifyHost } from "../lifecycle";
import { BundleVerificationError, SIGNATURE_FILE, verifyBundle } from "../release";
import { agentConfigSchema } from "../service";
import { AGENT_VERSION } from "../version";
import type { Collector } from "./collector";
import { fileCollector, readTail } from "./sources";

/** Archive paths the summary reads back. */
export const PATHS = {
  status: "agent/status.json",
  journal: "agent/journal.json",
  config: "agent/config.json",
  agentLog: "agent/agent.log",
  verify: "agent/verify.json",
  reportQueue: "agent/report-queue.json",
  versions: "versions.json",
  contentManifest: "content/manifest.json",
  contentSignature: "content/signature.json",
  brokerConfig: "broker/config.json",
  processes: "broker/processes.json",
  services: "system/services.json",
} as const;

/** Runs always kept whatever their age: the newest few. */
const NEWEST_RUNS = 3;
/** Reports shown from the queue (the newest); the count covers them all. */
const QUEUE_SHOWN = 200;

const json = (v: unknown): string => `${JSON.stringify(v, null, 2)}\n`;

const status: Collector = {
  name: "status",
  source: "winfleet-agent status --json (the journal)",
  async collect(ctx, sink) {
    sink.file(PATHS.status, json({ ...(await readStatus(ctx.root, 50)), agentVersion: AGENT_VERSION }));
  },
};

const journal: Collector = {
  name: "journal",
  source: "<root>/.winfleet/journal.json and the plan file of the run in it",
  async collect(ctx, sink) {
    const file = join(stateDir(ctx.root), "journal.json");
    if (!existsSync(file)) sink.missing(PATHS.journal, "no journal: nothing was ever applied on this root", file);
    else sink.file(PATHS.journal, await readFile(file), file);
    // A run's steps are in a file of its own beside the journal, named for the run.
    for (const name of (await readdir(stateDir(ctx.root)).catch(() => [])).filter((n) => /^plan-.+\.json$/.test(n))) {
      const plan = join(stateDir(ctx.root), name);
      const data = await readFile(plan).catch(() => undefined); // the run may have ended since the listing
      if (data) sink.file(`agent/${name}`, data, plan);
    }
  },
};

const runs: Collector = {
  name: "runs",
  source: "<root>/.winfleet/logs/<run>/*.log",
  async collect(ctx, sink, signal) {
    const base = join(stateDir(ctx.root), "logs");
    const dirs = (await readdir(base, { withFileTypes: true }).catch(() => []))
      .filter((d) => d.isDirectory())
      .map((d) => d.name)
      .sort();
    if (dirs.length === 0) {
      sink.missing("agent/runs", "no run has written a step log yet", base);
      return;
    }
    for (const [i, run] of dirs.entries()) {
      const dir = join(base, run);
      const recent = i >= dirs.length - NEWEST_RUNS || (await stat(dir)).mtime >= ctx.since;
      if (!recent || signal.aborted) continue;
      for (const f of (await readdir(dir)).sort())
        sink.file(`agent/runs/${run}/${f}`, await readTail(join(dir, f)), join(dir, f));
    }
  },
};

const config: Collector = {
  name: "config",
  source: "the agent config, secrets replaced by [secret]",
  async collect(ctx, sink) {
    if (!ctx.configFile) {
      sink.missing(PATHS.config, "no agent config named (--config) or found in the default place");
      return;
    }
    let doc: unknown;
    try {
      doc = parseYaml(await readFile(ctx.configFile, "utf8"));
    } catch (e) {
      // The text is never archived when it cannot be parsed: a secret's place in it is then unknown.
      sink.missing(PATHS.config, `cannot read or parse: ${errorMessage(e)}`, ctx.configFile);
      return;
    }
    sink.file(
      PATHS.config,
      json({
        file: ctx.configFile,
        valid: ctx.configError === undefined,
        ...(ctx.configError ? { error: ctx.configError } : {}),
        config: redactSecrets(agentConfigSchema, doc),
      }),
      ctx.configFile,
    );
  },
};

const reportQueue: Collector = {
  name: "report-queue",
  source: "<root>/.winfleet/report-queue",
  async collect(ctx, sink) {
    const dir = join(stateDir(ctx.root), "report-queue");
    const files = (await readdir(dir).catch(() => [] as string[])).filter((f) => /^r-\d{12}\.json$/.test(f)).sort();
    const reports: unknown[] = [];
    for (const f of files.slice(-QUEUE_SHOWN)) {
      try {
        reports.push(JSON.parse(await readFile(join(dir, f), "utf8")) as unknown);
      } catch (e) {
        reports.push({ file: f, unreadable: errorMessage(e) });
      }
    }
    const times = async (f: string | undefined): Promise<string | undefined> =>
      f ? (await stat(join(dir, f)).catch(() => undefined))?.mtime.toISOString() : undefined;
    sink.file(
      PATHS.reportQueue,
      json({
        dir,
        queued: files.length,
        oldest: await times(files[0]),
        newest: await times(files.at(-1)),
        shown: reports.length,
        reports,
      }),
      dir,
    );
  },
};

const verify: Collector = {
  name: "verify",
  source: "winfleet-agent verify --json",
  async collect(ctx, sink) {
    const r = await verifyHost(ctx.root, rootedMapper(ctx.root), ctx.platform);
    sink.file(PATHS.verify, json({ drift: r.items.length > 0, checked: r.checked, items: r.items }));
  },
};

const content: Collector = {
  name: "content",
  source: "the content bundle the config names",
  async collect(ctx, sink) {
    const dir = ctx.config?.content;
    if (!dir) {
      sink.missing("content", "no content known: no valid agent config");
      return;
    }
    const manifest = join(dir, "manifest.json");
    if (existsSync(manifest)) sink.file(PATHS.contentManifest, await readFile(manifest), manifest);
    else
      sink.missing(
        PATHS.contentManifest,
        `${dir} is not a built bundle (no manifest.json): a content source tree`,
        dir,
      );
    const signed = existsSync(join(dir, SIGNATURE_FILE));
    let signature: Record<string, unknown>;
    if (!ctx.config?.publicKey)
      signature = {
        status: signed ? "signed, not checked" : "unsigned",
        detail: "no publicKey is pinned in the agent config: unsigned bundles are accepted",
      };
    else {
      try {
        const v = await verifyBundle(dir, ctx.config.publicKey);
        signature = { status: "verified", files: v.files, version: v.version ?? "(not signed)", keyId: v.keyId };
      } catch (e) {
        signature = { status: e instanceof BundleVerificationError ? e.kind : "error", detail: errorMessage(e) };
      }
    }
    sink.file(PATHS.contentSignature, json({ bundle: dir, ...signature }), dir);
  },
};

const versions: Collector = {
  name: "versions",
  source: "the agent, Node.js, the OS, the applied template and components",
  async collect(ctx, sink) {
    const s = await readStatus(ctx.root, 0).catch(() => undefined);
    sink.file(
      PATHS.versions,
      json({
        agent: AGENT_VERSION,
        node: process.version,
        os: { type: osType(), release: release(), arch: arch(), platform: ctx.platform },
        template: s?.template ?? null,
        contentDigest: s?.contentDigest ?? null,
        components: (s?.components ?? []).map((c) => ({ name: c.name, version: c.version, state: c.state })),
      }),
    );
  },
};

/** The agent's collectors. */
export function agentCollectors(): Collector[] {
  return [
    status,
    journal,
    runs,
    config,
    fileCollector(
      "agent-log",
      PATHS.agentLog,
      (ctx) => ctx.agentLog,
      "the agent's log (the service's output)",
      "give --agent-log, or keep agent.log beside the config",
    ),
    reportQueue,
    verify,
    content,
    versions,
  ];
}
