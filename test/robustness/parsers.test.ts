/**
 * Property-based robustness: more than 10,000 generated malformed Ignition
 * configs, templates and metadata documents. Each must parse or end in a typed
 * ValidationError — never another exception or a hang — and a config that parses
 * must apply or fail with a catalog error having written nothing.
 */
import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import fc from "fast-check";
import { AgentError, ValidationError } from "../../agent/common/errors";
import { parseMetadata, parseTemplate } from "../../agent/content/load";
import { repairMissingCommas } from "../../agent/content/lenient-json";
import { applyIgnition, parseIgnition, rootedMapper } from "../../agent/ignition";
import { scratchDir } from "../support";

const json = fc.jsonValue({ maxDepth: 3 });
/** A value of `arb`, or with odds 1 in `noise` some other JSON value, or null. */
const noisy =
  (noise: number) =>
  <T>(arb: fc.Arbitrary<T>): fc.Arbitrary<unknown> =>
    fc.oneof(
      { weight: noise, arbitrary: arb },
      { weight: 1, arbitrary: json },
      { weight: 1, arbitrary: fc.constant(null) },
    );
const maybe = noisy(6);
const opt = <T extends Record<string, fc.Arbitrary<unknown>>>(shape: T) => fc.record(shape, { requiredKeys: [] });

/**
 * Ignition-shaped documents where each value is, with odds 1 in `noise`, some other
 * JSON value or null: high noise tests the type checks, low noise reaches the applier.
 */
function configArbitrary(noise: number): fc.Arbitrary<unknown> {
  const maybe = noisy(noise);

  // http sources point at a closed loopback port only: the fuzzer never reaches the network.
  const source = fc.oneof(
    { weight: noise, arbitrary: fc.constantFrom("data:,x", "data:;base64,aGk=", "data:,") },
    fc.constantFrom(
      "data:,x",
      "data:;base64,aGk=",
      "data:,%zz",
      "data:;base64,@",
      "http://127.0.0.1:9/x",
      "bundle:///a/b",
      "bundle:///../x",
      "gs://b/k",
      "",
      "DATA:,x",
    ),
    fc.string().map((s) => `data:,${s}`),
    fc.string(),
  );
  const hash = fc.oneof(
    { weight: 1, arbitrary: fc.string() },
    {
      weight: noise,
      arbitrary: fc
        .string({ unit: fc.constantFrom(..."0123456789abcdef"), minLength: 128, maxLength: 128 })
        .map((h) => `sha512-${h}`),
    },
    { weight: 1, arbitrary: fc.constantFrom("sha256-00", "md5-1") },
  );
  const resource = opt({
    source: maybe(source),
    compression: maybe(fc.constantFrom("gzip", "", "xz")),
    verification: maybe(opt({ hash: maybe(hash) })),
    httpHeaders: maybe(fc.array(opt({ name: maybe(fc.string()), value: maybe(fc.string()) }), { maxLength: 3 })),
  });
  const path = fc.oneof(
    {
      weight: noise,
      arbitrary: fc
        .tuple(fc.constantFrom("/a", "/a/b", "/b/c/d", "/k/x.ps1", "/c"), fc.nat(50))
        .map(([p, n]) => `${p}${n}`),
    },
    fc.constantFrom(
      "/a",
      "/a/b",
      "/a/b/c",
      "/a/../b",
      "/a/",
      "//a",
      "/",
      "rel",
      "C:\\k\\x",
      "d:/y",
      "/a\u0000b",
      `/${"n".repeat(300)}`,
    ),
    fc.string().map((s) => `/${s}`),
  );
  const mode = fc.oneof(
    { weight: noise, arbitrary: fc.constantFrom(0o644, 0o600, 0o755) },
    fc.integer({ min: -10, max: 70_000 }),
  );
  const owner = maybe(
    fc.oneof(
      opt({ id: maybe(fc.integer()) }),
      opt({ name: maybe(fc.string()) }),
      opt({ id: maybe(fc.integer()), name: maybe(fc.string()) }),
    ),
  );
  const file = opt({
    path: maybe(path),
    contents: maybe(resource),
    append: maybe(fc.array(resource, { maxLength: 3 })),
    mode: maybe(mode),
    overwrite: maybe(fc.boolean()),
    user: owner,
    group: owner,
    filesystem: maybe(fc.oneof({ weight: noise, arbitrary: fc.constant("root") }, fc.constantFrom("", "other"))),
    appendFlag: fc.boolean(),
  });
  const dir = opt({
    path: maybe(path),
    mode: maybe(mode),
    overwrite: maybe(fc.boolean()),
    filesystem: maybe(fc.constantFrom("root", "")),
  });
  const link = opt({
    path: maybe(path),
    target: maybe(fc.oneof(path, fc.string())),
    hard: maybe(fc.boolean()),
    overwrite: maybe(fc.boolean()),
    filesystem: maybe(fc.constant("root")),
  });
  return fc
    .record(
      {
        ignition: maybe(
          fc.record({
            version: maybe(
              fc.oneof(
                { weight: 10, arbitrary: fc.constantFrom("2.2.0", "3.0.0", "3.1.0", "3.2.0", "3.3.0", "3.4.0") },
                fc.constantFrom("3.5.0", "x", ""),
              ),
            ),
          }),
        ),
        storage: maybe(
          opt({
            files: maybe(fc.array(file, { maxLength: 5 })),
            directories: maybe(fc.array(dir, { maxLength: 3 })),
            links: maybe(fc.array(link, { maxLength: 3 })),
            filesystems: maybe(
              fc.array(
                opt({ device: maybe(fc.string()), format: maybe(fc.constantFrom("ext4", "")), path: maybe(path) }),
                { maxLength: 2 },
              ),
            ),
          }),
        ),
        systemd: maybe(
          opt({
            units: maybe(fc.array(opt({ name: maybe(fc.string()), dropins: maybe(fc.array(json)) }), { maxLength: 2 })),
          }),
        ),
        passwd: maybe(
          opt({
            users: maybe(fc.array(opt({ name: maybe(fc.string()), uid: maybe(fc.integer()) }), { maxLength: 2 })),
          }),
        ),
        kernelArguments: maybe(opt({ shouldExist: maybe(fc.array(fc.string(), { maxLength: 2 })) })),
      },
      { requiredKeys: ["ignition"] },
    )
    .map((c) => JSON.parse(JSON.stringify(c, (k, v: unknown) => (k === "appendFlag" ? undefined : v))) as unknown);
}

/** Runs `parse`; returns the value or undefined for a ValidationError; anything else fails the property. */
function typed<T>(parse: () => T): T | undefined {
  try {
    return parse();
  } catch (e) {
    if (e instanceof ValidationError) return undefined;
    throw e;
  }
}

const work = scratchDir("fuzz-");
let rootNo = 0;

describe("parsers under 10,000+ generated malformed inputs", () => {
  it("Ignition: 4,000 structured configs parse or fail typed; those that parse apply or fail having written nothing", async () => {
    let parsed = 0;
    await fc.assert(
      fc.asyncProperty(fc.oneof(configArbitrary(8), configArbitrary(400)), async (doc) => {
        const result = typed(() => parseIgnition(JSON.stringify(doc), { lenient: true }));
        if (!result) return;
        parsed++;
        const root = join(work, `r${rootNo++}`);
        try {
          await applyIgnition(result.config, {
            mapper: rootedMapper(root),
            retry: { attempts: 1 },
            sleep: () => Promise.resolve(),
            durable: false,
          });
        } catch (e) {
          assert.ok(e instanceof AgentError, `untyped failure: ${String(e)}`);
          assert.throws(() => readdirSync(root), "a failed apply wrote something");
        }
      }),
      { numRuns: 4000, seed: 4242 },
    );
    assert.ok(parsed > 300, `only ${parsed} configs parsed: the generator must reach the applier`);
    process.stdout.write(`# ${parsed} of 4000 parsed and were applied\n`);
  });

  it("Ignition: 2,000 arbitrary texts and JSON values", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          json.map((j) => JSON.stringify(j)),
          fc.string().map((s) => `{"ignition":{"version":"3.3.0"},${s}`),
        ),
        (text) => {
          typed(() => parseIgnition(text));
        },
      ),
      { numRuns: 2000, seed: 7 },
    );
  });

  it("templates: 2,000 documents", () => {
    const template = opt({
      name: maybe(fc.oneof(fc.string(), fc.constantFrom("sandbox", "a_b"))),
      version: maybe(fc.string()),
      description: maybe(fc.string()),
      install_message: maybe(fc.string()),
      packages: maybe(fc.array(fc.oneof(fc.string(), fc.constantFrom("a_1", "kube_v1.11.3")), { maxLength: 4 })),
      os: maybe(fc.array(fc.integer(), { maxLength: 3 })),
      variables: maybe(fc.dictionary(fc.string(), fc.string(), { maxKeys: 3 })),
    });
    fc.assert(
      fc.property(
        fc.oneof(
          template.map((t) => JSON.stringify(t)),
          fc.string(),
        ),
        fc.boolean(),
        (text, lenient) => {
          typed(() => parseTemplate(text, "t", { lenient }));
        },
      ),
      { numRuns: 2000, seed: 11 },
    );
  });

  it("metadata: 2,500 documents, including comma-less legacy text", () => {
    const section = maybe(
      opt({
        priority: maybe(fc.integer()),
        lprecmds: maybe(fc.array(fc.string(), { maxLength: 2 })),
        commands: maybe(fc.array(fc.string(), { maxLength: 2 })),
        lpstcmds: maybe(fc.array(fc.string(), { maxLength: 2 })),
        reboot: maybe(fc.constantFrom("yes", "no", "maybe", true)),
        uninstall: maybe(fc.constantFrom("yes", "no")),
      }),
    );
    const metadata = opt({
      name: maybe(fc.string()),
      version: maybe(fc.string()),
      install: section,
      uninstall: section,
      pre_upgrade: section,
      post_upgrade: section,
      files: maybe(fc.array(fc.string(), { maxLength: 2 })),
      isolated: maybe(fc.boolean()),
      timeout_seconds: maybe(fc.integer()),
    });
    // Pretty-printed, then with some member commas dropped: what legacy content looks like.
    const legacy = fc.tuple(metadata, fc.array(fc.nat(), { maxLength: 4 })).map(([m, drops]) => {
      let text = JSON.stringify(m, null, 1);
      for (const d of drops) {
        const commas = [...text.matchAll(/,\n/g)];
        const at = commas[d % Math.max(commas.length, 1)]?.index;
        if (at !== undefined) text = text.slice(0, at) + text.slice(at + 1);
      }
      return text;
    });
    fc.assert(
      fc.property(
        fc.oneof(
          metadata.map((m) => JSON.stringify(m)),
          legacy,
          fc.string(),
        ),
        fc.boolean(),
        (text, lenient) => {
          typed(() => parseMetadata(text, "m", { lenient }));
          repairMissingCommas(text);
        },
      ),
      { numRuns: 2500, seed: 13 },
    );
  });
});
