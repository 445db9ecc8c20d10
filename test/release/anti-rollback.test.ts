/**
 * Anti-rollback end to end: a real `winfleet release`, whose signatures carry
 * its version, then `winfleet-agent apply` and `up` refusing an older (or an
 * unversioned) signed bundle once a node has accepted a newer one under the
 * same key, accepting it with `--allow-downgrade` (logged, and reported as an
 * event), raising the record for a newer one, and keeping one record per key.
 */
import assert from "node:assert/strict";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { before, describe, it } from "node:test";
import { ACCEPTED_VERSIONS_FILE, compareVersions } from "../../agent/release/anti-rollback";
import { eventReport } from "../../agent/report/reports";
import { parseAgentConfig } from "../../agent/service/config";
import { signBundle, verifyBundle } from "../../agent/release/signing";
import { type CliRun, runCli, scratchDir, serveUntil, signedRelease, upArgs } from "../support";

const REPO = join(__dirname, "..", "..");
const VERSION = (JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as { version: string }).version;
const scratch = scratchDir("winfleet-rollback-");

const cli = (bin: "winfleet" | "winfleet-agent", args: readonly string[]): CliRun => runCli(bin, args, scratch);

let release: string;
let pub: string;
let otherPub: string;
let fleetKey: string;
let otherKey: string;
let fleetId: string;
let otherId: string;

before(async () => {
  ({ release, pub, otherPub, fleetKey, otherKey } = signedRelease(scratch));
  fleetId = (await verifyBundle(join(release, "content"), readFileSync(pub, "utf8"))).keyId;
  otherId = (await signBundle(mkdtempSync(join(scratch, "probe-")), otherKey)).keyId;
});

/** The release's content, signed again with `key` as release `version` (none: a signature that carries no version). */
async function contentAt(name: string, version: string | undefined, key = fleetKey): Promise<string> {
  const dir = join(scratch, name);
  cpSync(join(release, "content"), dir, { recursive: true });
  await signBundle(dir, key, version);
  return dir;
}

function apply(content: string, root: string, extra: readonly string[] = []): CliRun {
  return cli("winfleet-agent", [
    "apply",
    "--content",
    content,
    "--template",
    "sandbox@1.0.0",
    "--root",
    root,
    "--node-name",
    "rollback-1",
    "--public-key",
    pub,
    ...extra,
  ]);
}

const record = (root: string): { format: number; keys: Record<string, { agent?: string; content?: string }> } =>
  JSON.parse(readFileSync(join(root, ".winfleet", ACCEPTED_VERSIONS_FILE), "utf8")) as {
    format: number;
    keys: Record<string, { agent?: string; content?: string }>;
  };

const refusal = (kind: string, to: string, from: string, id: () => string): RegExp =>
  new RegExp(
    `is refused as a downgrade: ${to}, and this node has already accepted ${kind} version ${from.replace(/\./g, "\\.")} signed with key ${id().slice(0, 16)}…; pass --allow-downgrade`,
  );

describe("signed release versions", () => {
  it("winfleet release signs its version into both bundles", async () => {
    const key = readFileSync(pub, "utf8");
    assert.equal((await verifyBundle(join(release, "content"), key)).version, VERSION);
    assert.equal((await verifyBundle(join(release, "agent"), key)).version, VERSION);
  });

  it("a signed version cannot be edited: the signature covers it", async () => {
    const dir = await contentAt("edited-version", "1.0.0");
    const sig = join(dir, "winfleet-signature.json");
    const signed = JSON.parse(readFileSync(sig, "utf8")) as Record<string, unknown>;
    writeFileSync(sig, JSON.stringify({ ...signed, version: "99.0.0" }));
    await assert.rejects(verifyBundle(dir, readFileSync(pub, "utf8")), /no longer matches its signature/);
    // Nor dropped, to pass as a signature from before versions were signed.
    const unversioned: Record<string, unknown> = { ...signed, format: 1 };
    delete unversioned.version;
    writeFileSync(sig, JSON.stringify(unversioned));
    await assert.rejects(verifyBundle(dir, readFileSync(pub, "utf8")), /no longer matches its signature/);
  });

  it("orders versions as semantic versioning does", () => {
    assert.ok(compareVersions("0.10.0", "0.9.9") > 0);
    assert.ok(compareVersions("1.0.0-rc.1", "1.0.0") < 0);
    assert.ok(compareVersions("1.0.0-rc.2", "1.0.0-rc.10") < 0);
    assert.equal(compareVersions("1.0.0+build.7", "1.0.0"), 0);
  });
});

describe("content on a node that pins the key", () => {
  const root = join(scratch, "host-content");

  it("refuses to replay an older signed content bundle, naming both versions and the key, and changes nothing", async () => {
    assert.equal(
      apply(join(release, "content"), root).code,
      194,
      "the release is accepted (up to the sandbox's reboot)",
    );
    assert.equal(record(root).keys[fleetId]?.content, VERSION);
    const journal = readFileSync(join(root, ".winfleet", "journal.json"), "utf8");
    const r = apply(await contentAt("old", "0.0.1"), root);
    assert.equal(r.code, 1, r.stdout);
    assert.match(
      r.stderr,
      refusal("content", "it is version 0\\.0\\.1", VERSION, () => fleetId),
    );
    assert.equal(readFileSync(join(root, ".winfleet", "journal.json"), "utf8"), journal, "the journal was changed");
    assert.equal(record(root).keys[fleetId]?.content, VERSION);
  });

  it("refuses a signature that carries no version once a versioned one was accepted", async () => {
    const r = apply(await contentAt("unversioned", undefined), root);
    assert.equal(r.code, 1, r.stdout);
    assert.match(
      r.stderr,
      refusal("content", "its signature carries no release version", VERSION, () => fleetId),
    );
  });

  it("plan refuses it too, and records nothing", async () => {
    const r = cli("winfleet-agent", [
      "plan",
      "--content",
      await contentAt("plan-newer", "50.0.0"),
      "--template",
      "sandbox@1.0.0",
      "--root",
      root,
      "--public-key",
      pub,
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(record(root).keys[fleetId]?.content, VERSION, "plan changed the record");
    const old = cli("winfleet-agent", [
      "plan",
      "--content",
      join(scratch, "old"),
      "--template",
      "sandbox@1.0.0",
      "--root",
      root,
      "--public-key",
      pub,
    ]);
    assert.equal(old.code, 1);
    assert.match(old.stderr, /refused as a downgrade/);
  });

  it("accepts the older bundle with --allow-downgrade, logs it, reports it as an event, and records it", () => {
    const r = apply(join(scratch, "old"), root, ["--allow-downgrade"]);
    assert.notEqual(r.code, 1, r.stderr);
    const logged = r.stderr
      .split("\n")
      .filter((l) => l.includes('"msg":"downgrade allowed"'))
      .map((l) => JSON.parse(l) as Record<string, string>);
    assert.equal(logged.length, 1, r.stderr);
    assert.deepEqual(
      { kind: logged[0]?.kind, from: logged[0]?.from, to: logged[0]?.to, key: logged[0]?.key },
      { kind: "content", from: VERSION, to: "0.0.1", key: fleetId },
    );
    const events = r.stdout
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as Record<string, string>);
    const { at, ...event } = events.find((e) => e.event === "downgrade-allowed") ?? {};
    assert.ok(at !== undefined, r.stdout);
    assert.deepEqual(event, {
      event: "downgrade-allowed",
      kind: "content",
      keyId: fleetId,
      from: VERSION,
      to: "0.0.1",
    });
    assert.equal(record(root).keys[fleetId]?.content, "0.0.1", "the version the operator chose is the one recorded");
  });

  it("accepts a newer bundle and raises the recorded version; the one it replaced is then refused", async () => {
    const host = join(scratch, "host-newer");
    assert.equal(apply(join(release, "content"), host).code, 194);
    const r = apply(await contentAt("newer", "99.0.0"), host);
    assert.notEqual(r.code, 1, r.stderr);
    assert.equal(record(host).keys[fleetId]?.content, "99.0.0");
    const replay = apply(join(release, "content"), host);
    assert.equal(replay.code, 1);
    assert.match(
      replay.stderr,
      refusal("content", `it is version ${VERSION.replace(/\./g, "\\.")}`, "99.0.0", () => fleetId),
    );
  });

  it("keeps a record per key: another key's older release is judged against its own", async () => {
    const host = join(scratch, "host-newer");
    const r = cli("winfleet-agent", [
      "apply",
      "--content",
      await contentAt("other-key", "0.0.2", otherKey),
      "--template",
      "sandbox@1.0.0",
      "--root",
      host,
      "--node-name",
      "rollback-1",
      "--public-key",
      otherPub,
    ]);
    assert.notEqual(r.code, 1, r.stderr);
    assert.deepEqual(record(host).keys, { [fleetId]: { content: "99.0.0" }, [otherId]: { content: "0.0.2" } });
    const older = cli("winfleet-agent", [
      "apply",
      "--content",
      await contentAt("other-key-old", "0.0.1", otherKey),
      "--template",
      "sandbox@1.0.0",
      "--root",
      host,
      "--public-key",
      otherPub,
    ]);
    assert.equal(older.code, 1);
    assert.match(
      older.stderr,
      refusal("content", "it is version 0\\.0\\.1", "0.0.2", () => otherId),
    );
  });

  it("refuses everything when the record is corrupt, rather than nothing", () => {
    const host = join(scratch, "host-corrupt");
    mkdirSync(join(host, ".winfleet"), { recursive: true });
    writeFileSync(join(host, ".winfleet", ACCEPTED_VERSIONS_FILE), '{"format":1,"keys":{"x":{}}}\n');
    const r = apply(join(release, "content"), host);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /accepted-versions\.json is corrupt at keys\.x/);
  });

  it("an allowed downgrade becomes a Warning Event naming the versions and the key", () => {
    const at = new Date().toISOString();
    assert.deepEqual(
      eventReport({ type: "downgrade-allowed", at, kind: "content", keyId: fleetId, from: "1.2.0", to: "1.1.0" }),
      {
        type: "Warning",
        reason: "DowngradeAllowed",
        message: `Accepted content version 1.1.0, older than version 1.2.0 accepted before, signed with key ${fleetId.slice(0, 16)}…, because a downgrade was allowed`,
        at,
      },
    );
  });

  it("serve refuses older content from its config, and takes it with allowDowngrade there, logged", async () => {
    const host = join(scratch, "host-serve");
    assert.equal(apply(join(release, "content"), host).code, 194);
    assert.equal(apply(join(release, "content"), host).code, 0);
    const config = join(scratch, "serve.json");
    const settings = {
      content: await contentAt("serve-old", "0.0.1"),
      template: "sandbox",
      templateVersion: "1.0.0",
      root: host,
      publicKey: readFileSync(pub, "utf8"),
      verifyIntervalSeconds: 0,
    };
    writeFileSync(config, JSON.stringify(settings));
    const refused = await serveUntil(config, (e) => /cannot apply/.test(e));
    assert.match(
      refused,
      /"msg":"cannot apply","error":"[^"]*serve-old is refused as a downgrade: it is version 0\.0\.1, and this node has already accepted content version/,
    );
    assert.equal(record(host).keys[fleetId]?.content, VERSION);
    writeFileSync(config, JSON.stringify({ ...settings, allowDowngrade: true }));
    const allowed = await serveUntil(
      config,
      (e) => /downgrade allowed/.test(e) && record(host).keys[fleetId]?.content === "0.0.1",
    );
    assert.match(allowed, /"msg":"downgrade allowed","kind":"content"/);
    assert.equal(record(host).keys[fleetId]?.content, "0.0.1");
  });

  it("serve takes allowDowngrade from the agent config", () => {
    const config = parseAgentConfig(
      JSON.stringify({ content: "c", allowDowngrade: true }),
      join(scratch, "agent.json"),
    );
    assert.equal(config.allowDowngrade, true);
    assert.equal(parseAgentConfig(JSON.stringify({ content: "c" }), join(scratch, "agent.json")).allowDowngrade, false);
  });
});

describe("up on a node that pins the key", () => {
  const install = join(scratch, "install");
  const root = join(scratch, "host-up");
  const broker = join(scratch, "broker.yaml");
  const up = (bundle: string, extra: readonly string[] = []): CliRun =>
    cli(
      "winfleet-agent",
      upArgs(bundle, { installDir: install, config: broker, publicKey: pub }, [
        "--root",
        root,
        "--timeout",
        "60",
        ...extra,
      ]),
    );

  /** The release's agent, as version `version` (its package.json and its signature). */
  async function agentAt(version: string): Promise<string> {
    const dir = join(scratch, `agent-${version}`);
    cpSync(join(release, "agent"), dir, { recursive: true });
    const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as Record<string, unknown>;
    writeFileSync(join(dir, "package.json"), JSON.stringify({ ...pkg, version }));
    await signBundle(dir, fleetKey, version);
    return dir;
  }

  it("refuses an older agent before installing it, and installs it with --allow-downgrade, logged", async () => {
    writeFileSync(
      broker,
      `listen: ${scratch}/w.sock\nproxy: ${scratch}/p.sock\nstateDir: ${scratch}/state\nallowAll: true\n`,
    );
    try {
      const first = up(join(release, `agent-${VERSION}.tgz`));
      assert.equal(first.code, 0, first.stderr);
      assert.equal(record(root).keys[fleetId]?.agent, VERSION);
      const old = await agentAt("0.0.1");
      const refused = up(old);
      assert.equal(refused.code, 1, refused.stdout);
      assert.match(
        refused.stderr,
        refusal("agent", "it is version 0\\.0\\.1", VERSION, () => fleetId),
      );
      assert.ok(!existsSync(join(install, "releases", "0.0.1")), "the older agent was installed");
      const allowed = up(old, ["--allow-downgrade"]);
      assert.equal(allowed.code, 0, allowed.stderr);
      assert.equal(allowed.stdout, `upgraded: ${VERSION} -> 0.0.1\n`);
      assert.match(
        allowed.stderr,
        new RegExp(
          `"msg":"downgrade allowed","kind":"agent","bundle":"[^"]+","from":"${VERSION.replace(/\./g, "\\.")}","to":"0\\.0\\.1","key":"${fleetId}"`,
        ),
      );
      assert.equal(record(root).keys[fleetId]?.agent, "0.0.1");
      // Signed as one release, installing (and reporting) another: the record would lie.
      const mismatched = await agentAt("98.0.0");
      await signBundle(mismatched, fleetKey, "97.0.0");
      const lying = up(mismatched);
      assert.equal(lying.code, 1);
      assert.match(
        lying.stderr,
        /agent-98\.0\.0 is signed as release 97\.0\.0, but its package\.json version is "98\.0\.0"; it is refused/,
      );
      assert.equal(record(root).keys[fleetId]?.agent, "0.0.1");
      const newer = up(await agentAt("99.0.0"));
      assert.equal(newer.code, 0, newer.stderr);
      assert.equal(record(root).keys[fleetId]?.agent, "99.0.0");
    } finally {
      const pid = Number(readFileSync(join(install, "agent.pid"), "utf8"));
      if (pid > 0) process.kill(-pid, "SIGTERM");
    }
  });
});
