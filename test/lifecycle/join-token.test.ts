/**
 * The join token leaves the node once it has joined, through a real `winfleet-agent serve`: the
 * token is in the agent config while the node has no certificate of its own; once the node's
 * kubeconfig holds one (as the kubelet writes kubelet.conf when TLS bootstrap ends), the agent
 * rewrites its config without the token, keeping every other secret; and the joined node still
 * upgrades its join component, which asks for the token only to join.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, it } from "node:test";
import { exitOf, killedAfterTests, tempDir, waitFor, writeContent } from "../support";

const REPO = join(__dirname, "..", "..");
const TOKEN = "abcdef.0123456789abcdef";
const PASSWORD = "registry-pw-4711";
const dir = tempDir("join-token-");
const children = killedAfterTests();
after(() => rmSync(dir, { recursive: true, force: true }));

// join-kubeadm's contract: the token is asked for only while the node has no kubeconfig of its own.
const join1 =
  'if [ ! -f "$KUBECONFIG_PATH" ]; then test -n "$KUBE_BOOTSTRAP_TOKEN" && echo token > "$WINFLEET_ROOT/joined"; fi';
const component = (version: string) => ({
  name: "joiner",
  version,
  metadata: {
    variables: {
      KUBECONFIG_PATH: {},
      KUBE_BOOTSTRAP_TOKEN: { secret: true, required: false },
      REGISTRY_PASSWORD: { secret: true },
    },
    install: { commands: [join1] },
    pre_upgrade: { uninstall: "no", commands: [] },
    post_upgrade: {
      commands: [`${join1}; test -z "$KUBE_BOOTSTRAP_TOKEN" && echo ${version} > "$WINFLEET_ROOT/upgraded"`],
    },
  },
});

function writeConfig(file: string, config: Record<string, unknown>): void {
  writeFileSync(`${file}.tmp`, JSON.stringify(config));
  renameSync(`${file}.tmp`, file);
}

const readConfig = (file: string): { secrets: Record<string, string>; templateVersion: string } =>
  JSON.parse(readFileSync(file, "utf8")) as { secrets: Record<string, string>; templateVersion: string };

it("serve removes the join token once the node's kubeconfig holds its own certificate, and the node upgrades without it", async () => {
  const content = writeContent(
    [component("1.0.0"), component("1.1.0")],
    [
      { name: "t", version: "1.0.0", packages: ["joiner_1.0.0"] },
      { name: "t", version: "1.1.0", packages: ["joiner_1.1.0"] },
    ],
    join(dir, "content"),
  );
  const root = join(dir, "host");
  mkdirSync(root);
  const kubeconfig = join(dir, "kubelet.conf");
  const file = join(dir, "agent.json");
  const config = {
    content,
    template: "t",
    templateVersion: "1.0.0",
    root,
    nodeName: "joining",
    kubeconfig,
    verifyIntervalSeconds: 0,
    report: { enabled: false },
    variables: { KUBECONFIG_PATH: kubeconfig },
    secrets: { KUBE_BOOTSTRAP_TOKEN: TOKEN, REGISTRY_PASSWORD: PASSWORD },
  };
  writeConfig(file, config);
  const child = spawn(process.execPath, [join(REPO, "bin", "winfleet-agent.js"), "serve", "--config", file], {
    cwd: REPO,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  children.push(child);
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (c: Buffer) => (stdout += c.toString()));
  child.stderr?.on("data", (c: Buffer) => (stderr += c.toString()));
  const exit = exitOf(child);
  const converged = (version: string) => () =>
    stdout.split("\n").some((l) => l.includes('"apply-converged"') && l.includes(`"version":"${version}"`));
  try {
    await waitFor(converged("1.0.0"), 30_000, "convergence to 1.0.0");
    assert.equal(readFileSync(join(root, "joined"), "utf8"), "token\n", "the join ran with the token");
    assert.equal(readConfig(file).secrets.KUBE_BOOTSTRAP_TOKEN, TOKEN, "kept while the node has no certificate");

    // What the kubelet writes once TLS bootstrap has given it a certificate.
    const pem = join(dir, "kubelet-client-current.pem");
    writeFileSync(
      kubeconfig,
      `apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]\nusers: [{name: default-auth, user: {client-certificate: ${pem}, client-key: ${pem}}}]\n`,
    );
    await waitFor(() => readConfig(file).secrets.KUBE_BOOTSTRAP_TOKEN === undefined, 20_000, "the token removed");
    const after = readConfig(file);
    assert.deepEqual(after, { ...config, secrets: { REGISTRY_PASSWORD: PASSWORD } }, "everything else is kept");
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.ok(!readFileSync(file, "utf8").includes(TOKEN));

    writeConfig(file, { ...after, templateVersion: "1.1.0" });
    await waitFor(converged("1.1.0"), 30_000, "convergence to 1.1.0");
    assert.equal(readFileSync(join(root, "upgraded"), "utf8"), "1.1.0\n", "post_upgrade ran, with no token");
  } finally {
    child.kill("SIGTERM");
  }
  assert.equal(await exit, 0, stderr);
  assert.match(stderr, /removed the join token from the agent config/);
  assert.ok(!stderr.includes(TOKEN) && !stdout.includes(TOKEN), "the token is in no output");
  assert.ok(existsSync(kubeconfig));
});
