import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { computerNames, poolIdentity, poolVaultSecret, scaleSetName, scaleSetPrefix } from "./azure-names";

const VAULT = "/subscriptions/0000/resourceGroups/rg-kv/providers/Microsoft.KeyVault/vaults/kv-fleet";

describe("an Azure pool's names", () => {
  it("fit Windows and Azure for every pool name the schema allows, up to 1,000 VMs", () => {
    const longest = `a${"b".repeat(38)}c`;
    for (const pool of ["w", "0", "9lives", "production-a", longest]) {
      const prefix = scaleSetPrefix("prod", pool);
      assert.ok(prefix.length <= 9, prefix);
      assert.match(prefix, /^[a-z][a-z0-9-]*$/);
      const names = computerNames("prod", pool, 1000);
      assert.equal(new Set(names).size, 1000);
      for (const n of names) {
        assert.ok(n.length <= 15, n);
        assert.match(n, /^[a-z][a-z0-9-]*[0-9]$/, n);
      }
      assert.ok(scaleSetName("prod", pool).length <= 64);
      assert.ok(
        poolIdentity("prod", { name: pool, resourceGroup: "rg", subnetId: "/subscriptions/s/x" }).name.length <= 128,
      );
    }
  });

  it("differ between pools that share a prefix, and between stacks", () => {
    assert.notEqual(scaleSetPrefix("prod", "production-a"), scaleSetPrefix("prod", "production-b"));
    assert.notEqual(scaleSetPrefix("prod", "win"), scaleSetPrefix("test", "win"));
    assert.notDeepEqual(computerNames("prod", "win", 1), computerNames("test", "win", 1));
    assert.notEqual(poolVaultSecret(VAULT, "prod", "win").name, poolVaultSecret(VAULT, "test", "win").name);
  });

  it("keep a stack's name in its Key Vault secret, within Key Vault's characters and length", () => {
    const s = poolVaultSecret(VAULT, "my_org.prod", "win");
    assert.match(s.name, /^winfleet-my-org-prod-win-[0-9a-f]{5}$/);
    assert.equal(s.id, `${VAULT}/secrets/${s.name}`);
    assert.equal(s.url, `https://kv-fleet.vault.azure.net/secrets/${s.name}`);
    const long = poolVaultSecret(VAULT, "s".repeat(200), `a${"b".repeat(39)}`);
    assert.ok(long.name.length <= 127, `${long.name.length}`);
    assert.match(long.name, /^[A-Za-z0-9-]+$/);
  });
});
