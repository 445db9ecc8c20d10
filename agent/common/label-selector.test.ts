import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { drainSettingsSchema } from "./drain-settings";
import { matchesLabels, parseLabelSelector } from "./label-selector";

describe("label selectors, as kubectl --selector takes them", () => {
  it("parses every operator apimachinery's labels.Parse knows and matches as it does", () => {
    const s = parseLabelSelector("app=web, tier!=db,env in (a, b),track notin(canary),!legacy,owner,rank>2");
    assert.deepEqual(
      s.requirements.map((r) => `${r.key} ${r.operator} ${r.values.join("|")}`),
      ["app = web", "tier != db", "env in a|b", "track notin canary", "legacy !exists ", "owner exists ", "rank > 2"],
    );
    const labels = { app: "web", env: "a", owner: "me", rank: "3" };
    assert.equal(matchesLabels(s, labels), true);
    assert.equal(matchesLabels(s, { ...labels, legacy: "" }), false);
    assert.equal(matchesLabels(s, { ...labels, tier: "db" }), false);
    assert.equal(matchesLabels(s, { ...labels, rank: "2" }), false);
    assert.equal(matchesLabels(parseLabelSelector(""), {}), true, "the empty selector selects everything");
    assert.equal(matchesLabels(parseLabelSelector("winfleet.io/drain!=false"), {}), true);
  });

  it("refuses what the API server would refuse, saying why", () => {
    for (const [text, why] of [
      ["app=", undefined],
      ["app==web,", /ends with a comma/],
      ["=web", /expected a label key, found =/],
      ["app=we b", /expected a comma/],
      ["app in (a", /expected , or \)/],
      ["app in a", /needs a list in parentheses/],
      ["-app=x", /is not a label name/],
      ["Bad_Prefix/app=x", /not a DNS subdomain/],
      ["rank>x", /needs a whole number/],
    ] as const) {
      if (why === undefined) assert.doesNotThrow(() => parseLabelSelector(text), text);
      else assert.throws(() => parseLabelSelector(text), why, text);
    }
  });

  it("a bad pod selector in the drain knobs fails at its key", () => {
    const r = drainSettingsSchema.safeParse({ podSelector: "app in (a" });
    assert.equal(r.success, false);
    assert.deepEqual(r.error?.issues[0]?.path, ["podSelector"]);
    assert.deepEqual(drainSettingsSchema.parse({}), {
      enabled: true,
      timeoutSeconds: 0,
      deleteEmptyDirData: false,
      force: false,
      podSelector: "",
    });
  });
});
