import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
const DRIVER = `
__wf_readval() { __wf_v=; __wf_i=0; while [ "$__wf_i" -lt "$1" ]; do IFS= read -r __wf_l; if [ "$__wf_i" -gt 0 ]; then __wf_v="$__wf_v
$__wf_l"; else __wf_v=$__wf_l; fi; __wf_i=$((__wf_i+1)); done; }
while IFS=' ' read -r __wf_id __wf_tok __wf_n; do
  {
    while [ "$__wf_n" -gt 0 ]; do IFS=' ' read -r __wf_name __wf_c; __wf_readval "$__wf_c"; export "$__wf_name=$__wf_v"; __wf_n=$((__wf_n-1)); done
    IFS= read -r __wf_c; __wf_readval "$__wf_c"; __wf_cmd=$__wf_v
    unset __wf_v __wf_i __wf_l __wf_c __wf_name __wf_n __wf_id
    eval "$__wf_cmd" </dev/null;
  }
  __wf_s=$?
  printf '%s' "$__wf_tok"; printf '%s' "$__wf_tok" >&2; printf '%s %s\\n' "$__wf_id" "$__wf_s" >&3
done
`;
const env: Record<string,string> = { WINFLEET_ROOT: "/tmp/x", WINFLEET_NODE_NAME: "n1", WINFLEET_COMPONENT: "c", WINFLEET_COMPONENT_VERSION: "1.0.0", WINFLEET_PHASE: "install", A: "1", B: "two words", C: "x\ny" };
const child = spawn("/bin/sh", ["-c", DRIVER], { stdio: ["pipe", "pipe", "pipe", "pipe"], detached: true });
let out = Buffer.alloc(0), err = Buffer.alloc(0), st = "";
let waiter: (() => void) | undefined;
child.stdout!.on("data", (c: Buffer) => { out = Buffer.concat([out, c]); waiter?.(); });
child.stderr!.on("data", (c: Buffer) => { err = Buffer.concat([err, c]); waiter?.(); });
(child.stdio[3] as any).on("data", (c: Buffer) => { st += c.toString(); waiter?.(); });
let n = 0;
async function run(cmd: string, e: Record<string,string>) {
  const id = String(++n); const tok = randomBytes(16).toString("hex");
  const lines = [`${id} ${tok} ${Object.keys(e).length}`];
  for (const [k, v] of Object.entries(e)) { const parts = v.split("\n"); lines.push(`${k} ${parts.length}`, ...parts); }
  const cp = cmd.split("\n"); lines.push(String(cp.length), ...cp);
  child.stdin!.write(lines.join("\n") + "\n");
  await new Promise<void>((res) => { waiter = () => { if (st.includes(`${id} `) && out.includes(tok) && err.includes(tok)) { waiter = undefined; res(); } }; waiter(); });
  const i = out.indexOf(tok); const o = out.subarray(0, i); out = out.subarray(i + tok.length);
  const j = err.indexOf(tok); const e2 = err.subarray(0, j); err = err.subarray(j + tok.length);
  const m = new RegExp(`${id} (\\d+)\\n`).exec(st)!; st = st.slice(m.index + m[0].length);
  return { code: Number(m[1]), out: o, err: e2 };
}
async function perProcess(cmd: string) {
  return new Promise<number|null>((res) => { const c = spawn("/bin/sh", ["-c", cmd], { env: { ...process.env, ...env }, stdio: ["ignore","pipe","pipe"] }); c.stdout.resume(); c.stderr.resume(); c.on("close", res); });
}
void (async () => {

  for (let round = 0; round < 3; round++) {
    let t = performance.now();
    for (let i = 0; i < 30; i++) { const r = await run(`echo hello ${i} "$B"`, env); if (r.code !== 0) throw new Error("x"); }
    const a = performance.now() - t;
    t = performance.now();
    for (let i = 0; i < 30; i++) await perProcess(`echo hello ${i} "$B"`);
    const b = performance.now() - t;
    console.log(`session ${a.toFixed(1)}ms  per-process ${b.toFixed(1)}ms  ratio ${(b/a).toFixed(2)}`);
  }
  child.stdin!.end();
})();
