import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { mirroredUrl } from "./mirror";

describe("a download through the stack's mirror", () => {
  it("keeps the upstream's host and path under the mirror, and changes nothing without one", () => {
    const url = "https://dl.k8s.io/v1.34.7/kubernetes-node-windows-amd64.tar.gz";
    assert.equal(
      mirroredUrl(url, "https://mirror.corp.example/winfleet/"),
      "https://mirror.corp.example/winfleet/dl.k8s.io/v1.34.7/kubernetes-node-windows-amd64.tar.gz",
    );
    assert.equal(mirroredUrl("https://host:8443/a/b.zip?x=1", "https://m"), "https://m/host:8443/a/b.zip?x=1");
    assert.equal(mirroredUrl(url, undefined), url);
    assert.equal(mirroredUrl(url, ""), url);
  });
});
