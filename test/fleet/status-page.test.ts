/**
 * The status page in a real headless Chromium (Debian's, driven by
 * playwright-core): it lists every host with its template and components,
 * shows a rolling upgrade while it happens (a host moving to the new version
 * while the other still runs the old), ends with every host on the new one,
 * and the test saves a screenshot.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { type Fleet, REPO, killFleet, portOf, startFleet, winfleet, writeStack } from "./support";
import { CHROMIUM, exitOf, locate, skipUnlessInstalled, tempDir, writeContent } from "../support";

const fleets: Fleet[] = [];
const dirs: string[] = [];
after(() => {
  for (const f of fleets) killFleet(f);
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe("the status page in Chromium", { skip: skipUnlessInstalled(CHROMIUM) }, () => {
  it("lists every host and shows a rolling upgrade as it happens", async (t) => {
    const { chromium } = await import("playwright-core");
    const dir = tempDir("page-");
    dirs.push(dir);
    // A slow upgrade step, so the page can be caught mid-rollout.
    const content = writeContent(
      [
        { name: "web", version: "1", metadata: { install: { commands: ['echo "v1" > "$WINFLEET_ROOT/web"'] } } },
        {
          name: "web",
          version: "2",
          metadata: {
            install: { commands: ['echo "v2" > "$WINFLEET_ROOT/web"'] },
            pre_upgrade: { commands: ["sleep 2"] },
          },
        },
        { name: "db", version: "1", metadata: { install: { commands: ["true"] } } },
      ],
      [
        { name: "shop", version: "1", packages: ["web_1", "db_1"] },
        { name: "shop", version: "2", packages: ["web_2", "db_1"] },
      ],
    );
    dirs.push(content);
    const stack = join(dir, "Pulumi.page.yaml");
    const state = join(dir, "state");
    writeStack(stack, { content, template: "shop", version: "1", hosts: 2 });
    const fleet = startFleet(["--stack", stack, "--state-dir", state, "--port", "0", "--json"]);
    fleets.push(fleet);
    await fleet.waitFor(/"state":"finished".*"kind":"done"/);
    const url = `http://127.0.0.1:${portOf(fleet)}/`;

    const browser = await chromium.launch({
      executablePath: locate(CHROMIUM) ?? "/usr/bin/chromium",
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
    });
    try {
      const page = await browser.newPage({ viewport: { width: 1200, height: 700 } });
      const blocked: string[] = [];
      page.on("request", (r) => {
        if (!r.url().startsWith(url)) blocked.push(r.url());
      });
      await page.goto(url);
      for (const host of ["local-1", "local-2"]) {
        await page.locator(`tr[data-host="${host}"] td.state`, { hasText: "converged" }).waitFor({ timeout: 15_000 });
        assert.match(await page.locator(`tr[data-host="${host}"] td.template`).innerText(), /^shop 1$/);
        assert.match(await page.locator(`tr[data-host="${host}"]`).innerText(), /web 1/);
      }

      writeStack(stack, { content, template: "shop", version: "2", hosts: 2 });
      const roll = spawn(
        process.execPath,
        [join(REPO, "bin", "winfleet.js"), "local", "up", "--stack", stack, "--state-dir", state],
        { stdio: "ignore" },
      );
      const rolled = exitOf(roll);
      // Mid-rollout: local-1 is moving to shop 2 while local-2 still runs shop 1.
      await page
        .locator('tr[data-host="local-1"] td.template', { hasText: "shop 1 → shop 2" })
        .waitFor({ timeout: 15_000 });
      assert.equal(await page.locator('tr[data-host="local-2"] td.template').innerText(), "shop 1");
      assert.match(await page.locator("#rollout").innerText(), /rolling local-1 to shop 2/);
      mkdirSync(join(REPO, "test", ".tmp"), { recursive: true });
      await page.screenshot({ path: join(REPO, "test", ".tmp", "status-page-rolling.png"), fullPage: true });

      assert.equal(await rolled, 0);
      for (const host of ["local-1", "local-2"]) {
        await page.locator(`tr[data-host="${host}"] td.template`, { hasText: /^shop 2$/ }).waitFor({ timeout: 15_000 });
      }
      await page.locator("#timeline li", { hasText: "upgraded web 1 → 2" }).first().waitFor({ timeout: 5_000 });
      const shot = join(REPO, "test", ".tmp", "status-page.png");
      await page.screenshot({ path: shot, fullPage: true });
      t.diagnostic(`screenshots: ${shot} and status-page-rolling.png`);
      assert.deepEqual(blocked, [], "the page loaded something from elsewhere");
    } finally {
      await browser.close();
      assert.equal(winfleet(["local", "down", "--state-dir", state]).code, 0);
      await fleet.exit;
    }
  });
});
