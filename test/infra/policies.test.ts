/* eslint-disable @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-member-access -- the tests edit provider-shaped inputs in place */
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { renderStack } from "../../infra/render";
import { type PolicyResource, type Violation, boundedMaxUnavailable, runPolicies } from "../../policy/policies";
import { tempDir } from "../support";

// Pulumi's marker for a secret in resource inputs: a policy sees the value inside.
const SIG = "4dabf18193072939515e22adb298388d";
function unwrap(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(unwrap);
  if (v === null || typeof v !== "object") return v;
  const o = v as Record<string, unknown>;
  if (SIG in o) return unwrap(o.value);
  return Object.fromEntries(Object.entries(o).map(([k, x]) => [k, unwrap(x)]));
}

async function rendered(stack: string): Promise<PolicyResource[]> {
  return (await renderStack(stack)).raw.map((r) => ({
    type: r.type,
    name: r.name,
    props: unwrap(r.inputs) as Record<string, unknown>,
  }));
}

/** `resources` with the first resource of `type` changed by `edit`. */
function edited(
  resources: readonly PolicyResource[],
  type: string,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- provider input shapes, edited in place
  edit: (props: Record<string, any>) => void,
): PolicyResource[] {
  let done = false;
  return resources.map((r) => {
    if (done || r.type !== type) return r;
    done = true;
    const props = structuredClone(r.props);
    edit(props);
    return { ...r, props };
  });
}

describe("the policy pack over what the program really deploys", () => {
  const mandatory = async (
    resources: readonly PolicyResource[],
    config: Record<string, unknown> = {},
  ): Promise<Violation[]> => (await runPolicies(resources, config)).filter((v) => v.enforcementLevel === "mandatory");

  it("finds nothing wrong with the shipped stacks", async () => {
    for (const stack of ["dev", "rke2", "byoh"]) assert.deepEqual(await mandatory(await rendered(stack)), [], stack);
  });

  it("refuses bootstrap secrets outside protectedSettings, in a scale set's model and in an extension resource", async () => {
    const dev = await rendered("dev");
    const moved = edited(dev, "azure-native:compute:VirtualMachineScaleSet", (p) => {
      const ext = p.virtualMachineProfile.extensionProfile.extensions[0];
      ext.settings = { commandToExecute: ext.protectedSettings.commandToExecute };
      ext.protectedSettings = {};
    });
    const v = await mandatory(moved);
    assert.deepEqual(
      v.map((x) => x.policy),
      ["winfleet-extension-secrets-protected", "winfleet-extension-secrets-protected"],
    );
    assert.match(
      v[0]?.message ?? "",
      /^virtualMachineProfile\.extensionProfile\.extensions\[0\]\.settings\.commandToExecute is stored in plain text/,
    );
    const sas = edited(dev, "azure-native:compute:VirtualMachineScaleSet", (p) => {
      p.virtualMachineProfile.extensionProfile.extensions[0].settings = {
        fileUris: ["https://sa.blob.core.windows.net/c/b.ps1?sv=1&sig=abc"],
      };
    });
    assert.match((await mandatory(sas))[0]?.message ?? "", /fileUris carries a SAS signature/);
    const rke2 = edited(await rendered("rke2"), "azure-native:compute:VirtualMachineExtension", (p) => {
      p.settings = { commandToExecute: p.protectedSettings.commandToExecute };
    });
    assert.match((await mandatory(rke2))[0]?.message ?? "", /^settings\.commandToExecute is stored in plain text/);
  });

  it("refuses a bootstrap token that never expires, or not an hour from now; the program's own all expire", async () => {
    const dev = await rendered("dev");
    assert.deepEqual(await runPolicies(dev), [], "the tokens the program makes (one per node) expire");
    const isToken = (r: PolicyResource): boolean =>
      r.type === "kubernetes:core/v1:Secret" && (r.props as { type?: string }).type === "bootstrap.kubernetes.io/token";
    assert.ok(dev.filter(isToken).length >= 1, "dev has bootstrap tokens");
    const withExpiration = (expiration: string | undefined): PolicyResource[] =>
      dev.map((r) => {
        if (!isToken(r)) return r;
        const rest = { ...(r.props.stringData as Record<string, unknown>) };
        delete rest.expiration;
        return { ...r, props: { ...r.props, stringData: expiration === undefined ? rest : { ...rest, expiration } } };
      });
    const never = await mandatory(withExpiration(undefined));
    assert.ok(never.length >= 1);
    assert.match(never[0]?.message ?? "", /bootstrap-token-[a-z0-9]{6} never expires: give it an expiration/);
    const past = await mandatory(withExpiration("2001-01-01T00:00:00Z"));
    assert.match(past[0]?.message ?? "", /expires at 2001-01-01T00:00:00Z, within the hour or before now/);
    // As the Kubernetes provider hands it over in a preview: stringData folded into data, base64-encoded.
    const b64 = (v: unknown): string => Buffer.from(String(v), "utf8").toString("base64");
    const asProvided = dev.map((r) =>
      isToken(r)
        ? {
            ...r,
            props: {
              ...r.props,
              stringData: undefined,
              data: Object.fromEntries(
                Object.entries(r.props.stringData as Record<string, unknown>).map(([k, v]) => [k, b64(v)]),
              ),
            },
          }
        : r,
    );
    assert.deepEqual(await runPolicies(asProvided), [], "an expiration in data is read decoded");
  });

  it("reads a token's expiration as the engine hands it after the provider's check: in data, base64-encoded", async () => {
    const dev = await rendered("dev");
    const checked = (expiration?: string): PolicyResource[] =>
      dev.map((r) => {
        if ((r.props as { type?: string }).type !== "bootstrap.kubernetes.io/token") return r;
        const plain = { ...(r.props.stringData as Record<string, string>), ...(expiration ? { expiration } : {}) };
        const data = Object.fromEntries(Object.entries(plain).map(([k, v]) => [k, Buffer.from(v).toString("base64")]));
        const props: Record<string, unknown> = { ...r.props, data };
        delete props.stringData;
        return { ...r, props };
      });
    assert.deepEqual(await mandatory(checked()), [], "the program's tokens expire, read from data");
    const past = await mandatory(checked("2001-01-01T00:00:00Z"));
    assert.match(past[0]?.message ?? "", /expires at 2001-01-01T00:00:00Z, within the hour or before now/);
  });

  it("refuses an upgrader DaemonSet that could take every node at once", async () => {
    const dev = await rendered("dev");
    for (const bad of ["100%", 0, undefined]) {
      const v = await mandatory(
        edited(
          dev,
          "kubernetes:apps/v1:DaemonSet",
          (p) => void (p.spec.updateStrategy.rollingUpdate.maxUnavailable = bad),
        ),
      );
      assert.deepEqual(
        v.map((x) => x.policy),
        ["winfleet-upgrader-bounded-rollout"],
        String(bad),
      );
    }
    assert.ok(
      boundedMaxUnavailable(2) &&
        boundedMaxUnavailable("25%") &&
        !boundedMaxUnavailable("75%") &&
        !boundedMaxUnavailable(1.5),
    );
  });

  it("refuses a pool that is not pinned to exact versions", async () => {
    const rke2 = await rendered("rke2");
    const v = await mandatory(
      edited(rke2, "azure-native:compute:VirtualMachine", (p) => {
        delete p.tags["winfleet-template-version"];
        p.tags["winfleet-agent-version"] = "latest";
      }),
    );
    assert.deepEqual(
      v.map((x) => x.message),
      [
        "tag winfleet-template-version is missing: pin the pool to an exact version",
        'tag winfleet-agent-version is "latest": pin the pool to an exact version',
      ],
    );
  });

  it("refuses public IPs on Windows nodes unless the pool is allowed, as the program renders them", async () => {
    const dir = tempDir("winfleet-policy-");
    for (const stack of ["dev", "rke2"]) {
      const text = readFileSync(join(__dirname, "..", "..", "stacks", `Pulumi.${stack}.yaml`), "utf8")
        .replace("registerTaint: true", "registerTaint: true\n        publicIp: true")
        .replace("dir: content", `dir: ${join(__dirname, "..", "..", "content")}`);
      writeFileSync(join(dir, `Pulumi.${stack}.yaml`), text);
    }
    const vmss = (await renderStack("dev", { dir })).raw.map((r) => ({
      type: r.type,
      name: r.name,
      props: unwrap(r.inputs) as Record<string, unknown>,
    }));
    const v = await mandatory(vmss);
    assert.equal(v.length, 1);
    assert.match(v[0]?.message ?? "", /publicIPAddressConfiguration: pool win may not have public IPs/);
    assert.deepEqual(await mandatory(vmss, { "winfleet-no-public-ip": { allowedPools: ["win"] } }), []);
    const vms = (await renderStack("rke2", { dir })).raw.map((r) => ({
      type: r.type,
      name: r.name,
      props: unwrap(r.inputs) as Record<string, unknown>,
    }));
    const nic = await mandatory(vms);
    assert.ok(
      nic.length >= 6 && nic.every((x) => x.policy === "winfleet-no-public-ip"),
      "three NICs and their three addresses",
    );
  });
});
