/**
 * `validate` must agree with CoreOS `ignition-validate` (2.14, specs 3.0–3.3) on
 * accepting or rejecting every config of a generated corpus of valid and invalid
 * configs. Where the two disagree by design, the case is not generated (see
 * docs/ignition.md: a link without a target, which Ignition 2.14 accepts and then fails to
 * apply, and spec 2.2 / 3.4, which this Ignition release does not read).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ValidationError } from "../../agent/common/errors";
import { parseIgnition } from "../../agent/ignition";
import { runIgnitionValidate } from "./coreos";
import { validateCorpus } from "./corpus-validate";
import { IGNITION_VALIDATE, skipUnlessInstalled } from "../support";

const skip = skipUnlessInstalled(IGNITION_VALIDATE);

function oursAccepts(text: string): boolean {
  try {
    parseIgnition(text);
    return true;
  } catch (e) {
    if (e instanceof ValidationError) return false;
    throw e;
  }
}

describe("validate agrees with ignition-validate", { skip }, () => {
  it("on 320 generated valid and invalid configs", () => {
    const corpus = validateCorpus(777, 320);
    const disagreements: string[] = [];
    let rejected = 0;
    for (const c of corpus) {
      const theirs = runIgnitionValidate(c.text);
      const ours = oursAccepts(c.text);
      if (!theirs.ok) rejected++;
      if (ours !== theirs.ok) {
        disagreements.push(
          `${c.name} (${c.mutation}): ignition-validate ${theirs.ok ? "accepts" : "rejects"}, we ${ours ? "accept" : "reject"}\n${c.text}\n${theirs.log}`,
        );
      }
    }
    assert.deepEqual(disagreements, [], disagreements.slice(0, 5).join("\n\n"));
    assert.ok(rejected >= 100 && rejected <= 260, `${rejected} of 320 rejected: the corpus must hold plenty of both`);
  });

  it("3.4.0 configs are judged like the same config as 3.3.0", () => {
    // Ignition 2.14 predates spec 3.4.0; 3.4 changed nothing this corpus uses.
    for (const c of validateCorpus(4040, 60)) {
      if (!c.text.includes('"version":"3.3.0"')) continue;
      const as34 = c.text.replace('"version":"3.3.0"', '"version":"3.4.0"');
      if (c.mutation === "specialBitsMode") continue; // 3.4 supports special bits: a warning fewer, same verdict
      assert.equal(oursAccepts(as34), runIgnitionValidate(c.text).ok, `${c.name} (${c.mutation}): ${as34}`);
    }
  });
});
