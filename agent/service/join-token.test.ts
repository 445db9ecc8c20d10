import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { holdsClientCertificate, withoutJoinSecrets } from "./join-token";

const kubeconfig = (user: string): string =>
  `apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://10.0.0.1:6443"}}]\nusers:\n- name: u\n  user:\n${user}`;

describe("a node that has joined", () => {
  it("is one whose kubeconfig holds a client certificate and key, by path (the kubelet's) or inline (the stand-in's)", () => {
    const pem = "    client-certificate: C:\\var\\lib\\kubelet\\pki\\kubelet-client-current.pem\n";
    assert.equal(holdsClientCertificate(kubeconfig(`${pem}${pem.replace("certificate", "key")}`)), true);
    assert.equal(
      holdsClientCertificate(kubeconfig("    client-certificate-data: Y2VydA==\n    client-key-data: a2V5\n")),
      true,
    );
  });

  it("is not one with a bootstrap kubeconfig (a token), half a credential, or no kubeconfig to speak of", () => {
    assert.equal(holdsClientCertificate(kubeconfig("    token: abcdef.0123456789abcdef\n")), false);
    assert.equal(holdsClientCertificate(kubeconfig("    client-certificate-data: Y2VydA==\n")), false);
    assert.equal(
      holdsClientCertificate(kubeconfig("    client-certificate-data: ''\n    client-key-data: ''\n")),
      false,
    );
    for (const text of ["", "users: 3", "{", "- a\n- b", "null"])
      assert.equal(holdsClientCertificate(text), false, text);
  });
});

describe("the agent config without the join token", () => {
  it("drops KUBE_BOOTSTRAP_TOKEN and keeps every other field and secret", () => {
    const doc = {
      content: "/c",
      kubeconfig: "/k",
      secrets: { KUBE_BOOTSTRAP_TOKEN: "abcdef.0123456789abcdef", CALICO_KUBECONFIG: "x", RKE2_TOKEN: "y" },
    };
    assert.deepEqual(withoutJoinSecrets(doc), {
      doc: { content: "/c", kubeconfig: "/k", secrets: { CALICO_KUBECONFIG: "x", RKE2_TOKEN: "y" } },
      removed: ["KUBE_BOOTSTRAP_TOKEN"],
    });
    assert.equal(doc.secrets.KUBE_BOOTSTRAP_TOKEN, "abcdef.0123456789abcdef", "the input is left as it was");
  });

  it("is nothing to do when the config holds no join token, RKE2's included (RKE2's agent needs it on every start)", () => {
    assert.equal(withoutJoinSecrets({ content: "/c" }), undefined);
    assert.equal(withoutJoinSecrets({ content: "/c", secrets: { RKE2_TOKEN: "y" } }), undefined);
    assert.equal(withoutJoinSecrets({ content: "/c", secrets: ["KUBE_BOOTSTRAP_TOKEN"] }), undefined);
  });
});
