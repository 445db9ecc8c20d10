import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  CALICO_WINDOWS_LABEL,
  CALICO_WINDOWS_LABEL_VALUE,
  OPERATOR_NAMESPACE,
  SERVICES_ENDPOINT,
  WINDOWS_CNI_DIRECTORIES,
  apiServerEndpoint,
  renderCalicoWindows,
} from "./calico-windows-render";

describe("apiServerEndpoint", () => {
  it("splits an https:// URL into the host and port Calico's Windows containers dial", () => {
    assert.deepEqual(apiServerEndpoint("https://10.0.0.4:6443"), { host: "10.0.0.4", port: "6443" });
    assert.deepEqual(apiServerEndpoint("https://api.example.test"), { host: "api.example.test", port: "443" });
    assert.deepEqual(apiServerEndpoint("https://[fd00::4]:6443/"), { host: "fd00::4", port: "6443" });
  });

  it("refuses what is not an https:// URL, naming it", () => {
    assert.throws(() => apiServerEndpoint("http://10.0.0.4:6443"), /http:\/\/10\.0\.0\.4:6443 is not an https:\/\//);
    assert.throws(() => apiServerEndpoint("10.0.0.4:6443"), /not an https:\/\/ URL|is not a URL/);
  });
});

describe("renderCalicoWindows", () => {
  const settings = { apiServer: "https://10.0.0.4:6443", serviceCidrs: ["10.96.0.0/12"] };

  it("writes the endpoint ConfigMap the operator reads, in its namespace", () => {
    const { endpoint } = renderCalicoWindows(settings);
    assert.deepEqual(
      [endpoint.kind, endpoint.metadata.name, endpoint.metadata.namespace],
      ["ConfigMap", SERVICES_ENDPOINT, OPERATOR_NAMESPACE],
    );
    assert.deepEqual(endpoint.data, { KUBERNETES_SERVICE_HOST: "10.0.0.4", KUBERNETES_SERVICE_PORT: "6443" });
  });

  it("patches only winfleet's fields of the Installation: HNS, service CIDRs, CNI directories, the node selector", () => {
    const { installation } = renderCalicoWindows(settings);
    assert.deepEqual(installation.spec, {
      serviceCIDRs: ["10.96.0.0/12"],
      calicoNetwork: { windowsDataplane: "HNS" },
      windowsNodes: { ...WINDOWS_CNI_DIRECTORIES },
      calicoNodeWindowsDaemonSet: {
        spec: { template: { spec: { nodeSelector: { [CALICO_WINDOWS_LABEL]: CALICO_WINDOWS_LABEL_VALUE } } } },
      },
    });
    const withAdapter = renderCalicoWindows({ ...settings, vxlanAdapter: "Ethernet 2" }).installation.spec as {
      windowsNodes: Record<string, string>;
    };
    assert.equal(withAdapter.windowsNodes.vxlanAdapter, "Ethernet 2");
    const emptyAdapter = renderCalicoWindows({ ...settings, vxlanAdapter: "" }).installation.spec as {
      windowsNodes: Record<string, string>;
    };
    assert.equal("vxlanAdapter" in emptyAdapter.windowsNodes, false, "empty: the primary adapter");
  });

  it("refuses no service CIDR, and is deterministic", () => {
    assert.throws(() => renderCalicoWindows({ ...settings, serviceCidrs: [] }), /service CIDRs/);
    assert.deepEqual(renderCalicoWindows(settings), renderCalicoWindows(settings));
  });
});
