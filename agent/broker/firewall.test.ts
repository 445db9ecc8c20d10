import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { renderCloseRules, renderOpenRules } from "./firewall";

describe("rendered Windows firewall rules (as data)", () => {
  it("firewall rules are named <process>-<PROTO>-<port> in the ActiveStore, with names quoted", () => {
    const open = renderOpenRules("rancher-wins-it's", [
      { protocol: "TCP", port: 80 },
      { protocol: "UDP", port: 4789 },
      { protocol: "TCP", port: 0 },
    ]);
    assert.deepEqual(
      open.split("\n").map((l) => /-Name ('[^']*(?:''[^']*)*')/.exec(l)?.[1]),
      ["'rancher-wins-it''s-TCP-80'", "'rancher-wins-it''s-UDP-4789'"],
    );
    assert.match(open, /-PolicyStore ActiveStore/);
    assert.equal(
      renderCloseRules("rancher-wins-x"),
      "Get-NetFirewallRule -Name 'rancher-wins-x-*' -PolicyStore ActiveStore -ErrorAction SilentlyContinue | Remove-NetFirewallRule",
    );
  });
});
