import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { type IncomingHttpHeaders, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { after, before, describe, it } from "node:test";
import { AgentError } from "../../agent/common/errors";
import { applyIgnition } from "../../agent/ignition/apply";
import { resolveResource } from "../../agent/ignition/fetch";
import type { Resource } from "../../agent/ignition/model";
import { parseIgnition } from "../../agent/ignition/parse";
import { rootedMapper } from "../../agent/ignition/paths";
import { tempDir } from "../support";

const body = Buffer.from("payload from the server\n");
const sha512 = (b: Buffer): string => createHash("sha512").update(b).digest("hex");
let base = "";
let hits = 0;
let lastHeaders: IncomingHttpHeaders = {};
const server = createServer((req, res) => {
  hits++;
  lastHeaders = req.headers;
  const status =
    req.url === "/flaky" && hits <= 2 ? 503 : req.url === "/missing" ? 404 : req.url === "/down" ? 500 : 200;
  res.writeHead(status).end(status === 200 ? body : undefined);
});
before(async () => {
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => server.close());

const resource = (source: string, extra: Partial<Resource> = {}): Resource => ({
  source,
  compression: undefined,
  httpHeaders: [],
  hash: { function: "sha512", hex: sha512(body) },
  at: "storage.files[0].contents",
  ...extra,
});
const noSleep = (): Promise<void> => Promise.resolve();

describe("resolveResource over http", () => {
  it("retries 5xx with backoff and then succeeds", async () => {
    hits = 0;
    const delays: number[] = [];
    const data = await resolveResource(resource(`${base}/flaky`), {
      sleep: (ms) => {
        delays.push(ms);
        return Promise.resolve();
      },
    });
    assert.deepEqual(data, body);
    assert.deepEqual(delays, [100, 200]);
  });

  it("fails at once on a 4xx and after the bounded attempts on 5xx", async () => {
    await assert.rejects(resolveResource(resource(`${base}/missing`), { sleep: noSleep }), /HTTP 404/);
    hits = 0;
    await assert.rejects(
      resolveResource(resource(`${base}/down`), { sleep: noSleep, retry: { attempts: 3 } }),
      /after 3 attempts: HTTP 500/,
    );
    assert.equal(hits, 3);
  });

  it("sends httpHeaders and refuses a download without a hash unless allowed", async () => {
    await resolveResource(resource(`${base}/ok`, { httpHeaders: [{ name: "Authorization", value: "Bearer t" }] }));
    assert.equal(lastHeaders.authorization, "Bearer t");
    await assert.rejects(resolveResource(resource(`${base}/ok`, { hash: undefined })), /without verification.hash/);
    assert.deepEqual(
      await resolveResource(resource(`${base}/ok`, { hash: undefined }), { allowUnverifiedHttp: true }),
      body,
    );
  });

  it("checks the hash over decompressed bytes and names the resource on mismatch", async () => {
    const gz = `data:;base64,${gzipSync(body).toString("base64")}`;
    assert.deepEqual(await resolveResource(resource(gz, { compression: "gzip" })), body);
    await assert.rejects(
      resolveResource(resource("data:,other", { hash: { function: "sha512", hex: sha512(body) } })),
      (e: unknown) =>
        e instanceof AgentError &&
        e.code === "HASH_MISMATCH" &&
        e.message.startsWith("storage.files[0].contents.verification.hash"),
    );
  });

  it("reads bundle:/// sources from the content bundle and refuses escapes", async () => {
    const bundle = tempDir("bundle-");
    mkdirSync(join(bundle, "files"));
    writeFileSync(join(bundle, "files", "x.ps1"), body);
    assert.deepEqual(await resolveResource(resource("bundle:///files/x.ps1"), { bundleRoot: bundle }), body);
    await assert.rejects(resolveResource(resource("bundle:///files/x.ps1")), /needs a content bundle/);
    assert.throws(() =>
      parseIgnition(
        '{"ignition":{"version":"3.3.0"},"storage":{"files":[{"path":"/a","contents":{"source":"bundle:///../etc/passwd"}}]}}',
      ),
    );
  });
});

describe("applyIgnition", () => {
  it("writes nothing when any resource of the config fails to fetch", async () => {
    const root = tempDir("apply-");
    const { config } = parseIgnition(
      JSON.stringify({
        ignition: { version: "3.3.0" },
        storage: {
          files: [
            { path: "/first", contents: { source: "data:,fine" } },
            {
              path: "/second",
              contents: { source: `${base}/missing`, verification: { hash: `sha512-${sha512(body)}` } },
            },
          ],
        },
      }),
    );
    await assert.rejects(
      applyIgnition(config, { mapper: rootedMapper(root), ledgerPath: join(root, "ledger.json"), sleep: noSleep }),
      /HTTP 404/,
    );
    assert.deepEqual(readdirSync(root), []);
  });
});
