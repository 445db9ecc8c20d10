#!/usr/bin/env node
// Which stacks the workflows preview, deploy and check for drift: every stacks/Pulumi.<name>.yaml
// (a team's own stacks too, whatever their names), less those that are not ready and those that
// deploy nothing from CI. Not ready: the file still holds a REPLACE marker, a comment line that
// starts with REPLACE (the sample stacks put one above every value a user must set, and a stack
// deployed with its placeholders fails on them). Nothing from CI: every pool is `local` (the local
// fleet runs those on the machine it is started on). Prints a notice for each stack left out, and
// writes `stacks=<JSON array of names>` to $GITHUB_OUTPUT (standard output without it) for a job
// matrix. A stack file that is not YAML fails the job, naming it: a typo must not drop a stack silently.
//   usage: node scripts/ready-stacks.mjs [STACK...]   (no STACK: every stack file)
// STACKS_DIR overrides where the stack files are (default: stacks).
import { appendFileSync, existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";

const dir = process.env.STACKS_DIR || "stacks";
const FILE = /^Pulumi\.([a-z0-9][a-z0-9._-]*)\.yaml$/;
const MARKER = /^[ \t]*#[ \t]*REPLACE([^A-Za-z0-9_]|$)/m;
const CLOUD_KINDS = new Set(["azure", "byo"]);

function fail(message) {
  console.log(message);
  process.exit(2);
}

const named = process.argv.slice(2);
for (const stack of named)
  if (!/^[a-z0-9][a-z0-9._-]*$/.test(stack))
    fail(`::error::'${stack}' is not a stack name (lower-case letters, digits, '.', '_' and '-')`);
const stacks =
  named.length > 0
    ? named
    : existsSync(dir)
      ? readdirSync(dir)
          .map((f) => FILE.exec(f)?.[1])
          .filter((s) => s !== undefined)
          .sort()
      : fail(`::error::no folder ${dir} of stack files`);

const ready = [];
for (const stack of stacks) {
  const file = join(dir, `Pulumi.${stack}.yaml`);
  if (!existsSync(file)) fail(`::error file=${file}::no such stack file`);
  const text = readFileSync(file, "utf8");
  if (MARKER.test(text)) {
    console.log(
      `::notice file=${file}::stack ${stack} still has REPLACE markers: it is not deployed until each marked value is set and its marker removed`,
    );
    continue;
  }
  let doc;
  try {
    doc = parse(text);
  } catch (e) {
    fail(`::error file=${file}::not valid YAML: ${e instanceof Error ? e.message.split("\n")[0] : String(e)}`);
  }
  const pools = doc?.config?.["winfleet:fleet"]?.pools;
  if (!Array.isArray(pools) || !pools.some((p) => CLOUD_KINDS.has(p?.kind))) {
    console.log(`::notice file=${file}::stack ${stack} deploys nothing from CI (no azure or byo pool)`);
    continue;
  }
  ready.push(stack);
}

const line = `stacks=${JSON.stringify(ready)}\n`;
if (process.env.GITHUB_OUTPUT) appendFileSync(process.env.GITHUB_OUTPUT, line);
else process.stdout.write(line);
