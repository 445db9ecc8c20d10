/**
 * The winfleet policy pack: `pulumi preview --policy-pack policy` (or
 * `pulumi/actions` with `policyPacks: policy`). The rules are in policies.ts.
 */
import { PolicyPack } from "@pulumi/policy";
import { POLICIES } from "./policies";

new PolicyPack("winfleet", { policies: [...POLICIES] });
