/**
 * What makes a large fleet render in linear time, and that none of it changes
 * what is rendered or deployed: the program reads each secret key of the stack
 * config once (Pulumi parses the whole config, every host of it, at each read),
 * declares a host only once the previous one's registrations have run, keeps
 * every resource's type, name and parent, and renders the same files with
 * Pulumi's runtime as lean as a render needs it as with the runtime a
 * deployment runs.
 */
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import * as pulumi from "@pulumi/pulumi";
import { parse as parseYaml, stringify as toYaml } from "yaml";
import { runtimeSettings, withLeanRuntime } from "../../infra/lean-runtime";
import { renderStack } from "../../infra/render";
import { STACKS_DIR } from "../../infra/stack-file";
import { scratchDir } from "../support";

const REPO = join(__dirname, "..", "..");
const scratch = scratchDir("winfleet-render-scale-");
const HOSTS = 12;

/** The byoh stack with `hosts` hosts in its BYO pool, as a stack file of its own. */
function byoStack(hosts: number): string {
  const doc = parseYaml(readFileSync(join(STACKS_DIR, "Pulumi.byoh.yaml"), "utf8")) as {
    config: Record<string, { content: Record<string, unknown>; pools: { kind: string; hosts: unknown[] }[] }>;
  };
  const fleet = doc.config["winfleet:fleet"];
  if (!fleet) throw new Error("Pulumi.byoh.yaml has no winfleet:fleet");
  fleet.content.dir = join(REPO, "content");
  const pool = fleet.pools.find((p) => p.kind === "byo");
  if (!pool) throw new Error("Pulumi.byoh.yaml has no byo pool");
  pool.hosts = Array.from({ length: hosts }, (_, i) => ({
    name: `win-${String(i + 1).padStart(2, "0")}`,
    address: `10.0.0.${i + 10}`,
    user: "Administrator",
    privateKeySecret: "sshKeyOps",
    hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICXNVOzIIm1BJv7lEfBEQ5F0Gf3qntI7gbw6dHIL99mE",
  }));
  const file = join(scratch, `Pulumi.byo${hosts}.yaml`);
  writeFileSync(file, toYaml(doc));
  return file;
}

interface Registration {
  readonly type: string;
  readonly name: string;
  readonly parent: string;
}

type RegisterResource = (req: { getType(): string; getName(): string; getParent(): string }, cb: unknown) => unknown;

/** Every registration that reaches the mock monitor, in the order it does, while `work` runs. */
async function registrations(work: () => Promise<unknown>): Promise<Registration[]> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { MockMonitor } = require("@pulumi/pulumi/runtime/mocks") as {
    MockMonitor: { prototype: { registerResource: RegisterResource } };
  };
  const original = MockMonitor.prototype.registerResource;
  const seen: Registration[] = [];
  MockMonitor.prototype.registerResource = function (this: unknown, req, cb) {
    seen.push({ type: req.getType(), name: req.getName(), parent: req.getParent() });
    return original.call(this, req, cb);
  };
  try {
    await work();
  } finally {
    MockMonitor.prototype.registerResource = original;
  }
  return seen;
}

describe("a BYO fleet's render, as it grows", () => {
  const stack = byoStack(HOSTS);
  const reads = new Map<string, number>();
  let seen: Registration[] = [];
  const proto = pulumi.Config.prototype as unknown as { requireSecret: (key: string) => unknown };
  const requireSecret = proto.requireSecret;
  before(async () => {
    proto.requireSecret = function (this: pulumi.Config, key: string) {
      reads.set(key, (reads.get(key) ?? 0) + 1);
      return requireSecret.call(this, key);
    };
    seen = await registrations(() => renderStack(stack));
  });
  after(() => {
    proto.requireSecret = requireSecret;
  });

  it("reads each secret key once per run of the program, not once per host", () => {
    // Two runs: a render runs the program twice, with different secret values.
    assert.equal(reads.get("sshKeyOps"), 2, `sshKeyOps read ${reads.get("sshKeyOps")} times for ${HOSTS} hosts`);
  });

  it("declares a host once the previous host's resources have all reached the monitor", () => {
    const run = seen.slice(0, seen.length / 2); // the first of the two runs
    const hosts = run.filter((r) => r.type === "winfleet:index:ByoWindowsHost");
    assert.equal(hosts.length, HOSTS);
    for (let i = 0; i + 1 < hosts.length; i++) {
      const next = run.indexOf(hosts[i + 1]!);
      const children = run.filter((r) => r.name.startsWith(`${hosts[i]!.name}-`));
      assert.equal(children.length, 6, hosts[i]!.name); // its Node, registration, -prepare, two copies, bootstrap run
      for (const c of children)
        assert.ok(run.indexOf(c) < next, `${c.name} reached the monitor after ${hosts[i + 1]!.name} was declared`);
    }
  });

  it("keeps every host's resources: their types, names and parents (the URNs a deployed stack holds)", () => {
    const host = "urn:pulumi:byo12::winfleet::winfleet:index:ByoWindowsHost::lab-win-07";
    const of = (name: RegExp): Registration[] => seen.filter((r) => name.test(r.name));
    assert.deepEqual(of(/^lab-win-07$/)[0], { type: "winfleet:index:ByoWindowsHost", name: "lab-win-07", parent: "" });
    // The bootstrap's copy and run are named by its epoch (the same in both runs).
    for (const [name, type] of [
      [/^lab-win-07-node-win-07$/, "kubernetes:core/v1:Node"],
      [/^lab-win-07-agent$/, "command:remote:Command"],
      [/^lab-win-07-content$/, "command:remote:CopyToRemote"],
      [/^lab-win-07-bootstrap-[0-9a-f]{12}-file$/, "command:remote:CopyToRemote"],
      [/^lab-win-07-bootstrap-[0-9a-f]{12}$/, "command:remote:Command"],
    ] as const) {
      const found = of(name);
      assert.equal(found.length, 2, `${String(name)} once per run`);
      for (const r of found) assert.deepEqual({ type: r.type, parent: r.parent }, { type, parent: host });
    }
  });
});

describe("Pulumi's runtime during a render", () => {
  it("renders the same files as the runtime a deployment runs, traces and promise wrapping on", async () => {
    for (const stack of [byoStack(3), "dev", "rke2"]) {
      const lean = await renderStack(stack);
      const full = await renderStack(stack, { asDeployed: true });
      assert.deepEqual([...lean.files.keys()].sort(), [...full.files.keys()].sort(), stack);
      for (const [file, text] of lean.files) assert.equal(full.files.get(file), text, `${stack}: ${file}`);
    }
  });

  it("is put back as it was after a render, and after a failing one", async () => {
    const before_ = runtimeSettings();
    let inside = runtimeSettings();
    let stack: string | undefined = "";
    await withLeanRuntime(() => {
      inside = runtimeSettings();
      Error.stackTraceLimit = Number.POSITIVE_INFINITY; // as Pulumi does for a source position
      stack = new Error("where").stack;
      return Promise.resolve();
    });
    assert.equal(stack, undefined, "no stack trace is captured during a render");
    assert.notEqual(inside.debuggablePromise, before_.debuggablePromise, "promises are not wrapped during a render");
    assert.deepEqual(runtimeSettings(), before_);
    await assert.rejects(
      withLeanRuntime(() => Promise.reject(new Error("a bug"))),
      /a bug/,
    );
    assert.deepEqual(runtimeSettings(), before_);
  });
});
