/**
 * Ignition on Windows paths: the bundle's `ignition apply` below drive-letter
 * roots, and the engine itself (bundled into this suite) for the name rules.
 *
 * Relies on (Windows): `C:\x` and `C:/x` naming one directory; names compared
 * without case; device names (CON, NUL, COM1…) and trailing dots and spaces
 * that are not file names; paths longer than MAX_PATH through Node's `\\?\`
 * prefix; a file another process opened without FILE_SHARE_DELETE, or a
 * read-only one, refusing to be replaced; junctions and symbolic links, which
 * Node reads back as links; the state directory's DACL (below each root, for
 * the ledger), which each apply sets with icacls and reads back through
 * PowerShell's Get-Acl (state-acl.win32.ts).
 * Wine differs: it creates `CON` and `a.` as ordinary files (Windows opens the
 * console and drops the dot: the agent refuses both before either happens), and
 * Wine 8 has no junctions or symbolic links at all, so root confinement through
 * them is asserted only on Windows (the Windows workflow); here the test checks
 * that Wine still refuses to make one, so a Wine that gains them is noticed.
 * Wine's icacls changes nothing and its powershell.exe prints nothing, so the
 * state directory's DACL is applied but left unconfirmed: only a Windows host
 * confirms it (the Windows workflow, where an apply whose state directory is
 * not private after icacls fails).
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { parseIgnition } from "../../agent/ignition/parse";
import { applyIgnition } from "../../agent/ignition/apply";
import { rootedMapper } from "../../agent/ignition/paths";
import { pollUntil } from "../support";
import { agent, scratch, underWine, uniqueName, wineDiffers } from "./support";

const T = { timeout: 180_000 };
const dir = scratch("ignition");
let configs = 0;

type FileSpec = { path: string; text?: string; mode?: number; overwrite?: boolean };

/** Writes an Ignition 3.3 config of files and directories; returns its path. */
function config(files: FileSpec[], directories: string[] = []): string {
  const file = join(dir, `config-${++configs}.ign`);
  writeFileSync(
    file,
    JSON.stringify({
      ignition: { version: "3.3.0" },
      storage: {
        directories: directories.map((path) => ({ path })),
        files: files.map((f) => ({
          path: f.path,
          contents: { source: `data:,${encodeURIComponent(f.text ?? f.path)}` },
          ...(f.mode !== undefined ? { mode: f.mode } : {}),
          overwrite: f.overwrite ?? true,
        })),
      },
    }),
  );
  return file;
}

const apply = (file: string, root: string, ...more: string[]) =>
  agent(["ignition", "apply", "--root", root, ...more, file]);

/** What a config put in the root: all but the agent's own state directory, which an apply makes before it plans. */
const written = (root: string): string[] => readdirSync(root).filter((n) => n !== ".winfleet");

describe("Ignition on Windows paths", () => {
  it("applies below a drive-letter root written with `\\` or `/`, and a re-apply changes nothing", T, async () => {
    const root = join(dir, "slashes");
    const file = config(
      [{ path: "/etc/winfleet/app.conf", text: "x=1" }, { path: "/k/bin/run.cmd" }],
      ["/var/log/app"],
    );
    const first = await apply(file, root);
    assert.equal(first.code, 0, first.stderr);
    assert.equal(readFileSync(join(root, "etc", "winfleet", "app.conf"), "utf8"), "x=1");
    assert.ok(existsSync(join(root, "var", "log", "app")));
    const again = await apply(file, root.replace(/\\/g, "/"));
    assert.equal(again.code, 0, again.stderr);
    assert.equal(again.stdout.split("\n")[0], "changed 0, unchanged 3");
  });

  it("replaces a file it made read-only when its content changes", T, async (t) => {
    // Relies on: Windows refusing to rename over a read-only file (a mode without write bits sets the attribute).
    wineDiffers(
      t,
      "Wine renames over a read-only file; Windows refuses until the attribute is cleared, as the agent does",
    );
    const root = join(dir, "read-only");
    const first = await apply(config([{ path: "/k/readonly.txt", text: "one", mode: 0o444 }]), root);
    assert.equal(first.code, 0, first.stderr);
    const second = await apply(config([{ path: "/k/readonly.txt", text: "two", mode: 0o444 }]), root);
    assert.equal(second.code, 0, second.stderr);
    assert.equal(readFileSync(join(root, "k", "readonly.txt"), "utf8"), "two");
  });

  it(
    "maps another drive below a directory root as <root>\\D, and on the host's own root to that drive",
    T,
    async () => {
      const name = uniqueName("wf-ign");
      const below = join(dir, "drives");
      const r = await apply(config([{ path: `D:/${name}/d.txt` }, { path: `C:/${name}/c.txt` }]), below);
      assert.equal(r.code, 0, r.stderr);
      assert.ok(existsSync(join(below, "D", name, "d.txt")), "D: below the root, as a directory named D");
      assert.ok(existsSync(join(below, name, "c.txt")), "the system drive is the root itself");
      // The host's own root: C:\ and D:\ themselves (a D: drive exists here and on Windows runners).
      const ledger = join(dir, "drive-root-ledger.json");
      try {
        const own = await apply(
          config([{ path: `/${name}/c.txt` }, { path: `D:/${name}/d.txt` }]),
          "C:\\",
          "--ledger",
          ledger,
        );
        assert.equal(own.code, 0, own.stderr);
        assert.equal(readFileSync(`C:\\${name}\\c.txt`, "utf8"), `/${name}/c.txt`);
        assert.equal(readFileSync(`D:\\${name}\\d.txt`, "utf8"), `D:/${name}/d.txt`);
      } finally {
        rmSync(`C:\\${name}`, { recursive: true, force: true });
        rmSync(`D:\\${name}`, { recursive: true, force: true });
      }
    },
  );

  it("refuses two entries whose names differ only in case, before anything is written", T, async () => {
    const root = join(dir, "case-collision");
    mkdirSync(root);
    const r = await apply(config([{ path: "/etc/Hosts" }, { path: "/ETC/hosts" }]), root);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /where \/etc\/Hosts also resolves \(names differing only in case are one on this host\)/);
    assert.deepEqual(written(root), []);
  });

  it("takes a directory and what the config puts in it under another case as one directory", T, async () => {
    const root = join(dir, "case-directory");
    const r = await apply(config([{ path: "/data/x.txt" }, { path: "/DATA/Sub/y.txt" }], ["/Data"]), root);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(written(root), ["Data"]);
    assert.deepEqual(readdirSync(join(root, "Data")).sort(), ["Sub", "x.txt"]);
  });

  it("refuses names Windows cannot hold, naming each, and writes nothing", T, async (t) => {
    wineDiffers(t, "Wine would create CON, NUL.txt and `a.` as files; Windows opens the device or drops the dot");
    const root = join(dir, "names");
    mkdirSync(root);
    const refused: [string, RegExp][] = [
      ["/etc/CON", /"CON" is a device name/],
      ["/etc/nul.txt", /"nul.txt" is a device name/],
      ["/etc/com1.log", /"com1.log" is a device name/],
      ["/etc/LPT9", /"LPT9" is a device name/],
      ["/etc/trailing.", /"trailing." ends in a dot or a space/],
      ["/etc/space ", /"space " ends in a dot or a space/],
      ["/etc/a:stream", /"a:stream" holds ":"/],
      ["/etc/what?", /"what\?" holds "\?"/],
      ["/etc\\..\\..\\escaped.txt", /"etc\\\\..\\\\..\\\\escaped.txt" holds "\\\\"/],
    ];
    for (const [path, message] of refused) {
      const parsed = parseIgnition(readFileSync(config([{ path }]), "utf8"));
      await assert.rejects(
        applyIgnition(parsed.config, { mapper: rootedMapper(root), durable: false }),
        (e: Error) => message.test(e.message) && e.message.includes("storage.files[0].path"),
        path,
      );
    }
    assert.deepEqual(written(root), []);
    assert.ok(!existsSync(join(dir, "escaped.txt")), "nothing above the root");
    // The bundle refuses the same way.
    const r = await apply(config([{ path: "/ok.txt" }, { path: "/etc/CON" }]), root);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /storage\.files\[1\]\.path \(\/etc\/CON\): "CON" is a device name/);
    assert.deepEqual(written(root), []);
    // Names that only look alike are files like any other.
    const fine = await apply(
      config([{ path: "/etc/console.txt" }, { path: "/etc/com10.log" }, { path: "/etc/a .b" }]),
      root,
    );
    assert.equal(fine.code, 0, fine.stderr);
    assert.deepEqual(readdirSync(join(root, "etc")).sort(), ["a .b", "com10.log", "console.txt"]);
  });

  it("writes, re-applies and reads back paths longer than MAX_PATH (260)", T, async () => {
    const root = join(dir, "long");
    const deep = Array.from({ length: 14 }, (_, i) => `directory-level-${String(i).padStart(2, "0")}-xxxxxxxx`);
    const path = `/${deep.join("/")}/file.txt`;
    assert.ok(root.length + path.length > 400, `${root.length + path.length} characters`);
    const file = config([{ path, text: "deep" }]);
    const r = await apply(file, root);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(readFileSync(join(root, ...deep, "file.txt"), "utf8"), "deep");
    const again = await apply(file, root);
    assert.equal(again.stdout.split("\n")[0], "changed 0, unchanged 1", again.stderr);
  });

  it(
    "waits for a file another process holds open, then refuses it naming the file, leaving it as it was",
    T,
    async () => {
      // Relies on: cmd's `>>` opening the file without FILE_SHARE_DELETE, so Windows refuses to replace it.
      const root = join(dir, "in-use");
      const target = join(root, "k", "held.txt");
      const first = await apply(config([{ path: "/k/held.txt", text: "old" }]), root);
      assert.equal(first.code, 0, first.stderr);

      const briefly = holdOpen(target, 5000);
      await briefly.held;
      const waited = await apply(config([{ path: "/k/held.txt", text: "new" }]), root);
      await briefly;
      assert.equal(waited.code, 0, waited.stderr);
      assert.equal(readFileSync(target, "utf8"), "new");

      const long = holdOpen(target, 14_000);
      await long.held;
      const started = Date.now();
      const refused = await apply(config([{ path: "/k/held.txt", text: "newer" }]), root);
      assert.equal(refused.code, 1, refused.stdout);
      assert.match(
        refused.stderr,
        /held\.txt is in use by another process \((EPERM|EBUSY|EACCES)\): it was not replaced after 5 s/,
      );
      assert.ok(Date.now() - started >= 5000);
      assert.equal(readFileSync(target, "utf8").replace(/\r?\n$/, ""), "new");
      await long;
    },
  );

  it("follows junctions and links inside the root as Windows resolves them, never out of it", T, async (t) => {
    const root = join(dir, "links");
    const outside = join(dir, "outside");
    mkdirSync(join(root, "etc"), { recursive: true });
    mkdirSync(outside);
    if (underWine) {
      wineDiffers(
        t,
        "Wine 8 makes no junctions or symbolic links (ENOTSUP); only Windows shows confinement through them",
      );
      assert.throws(() => symlinkSync(outside, join(root, "etc", "j"), "junction"), { code: "ENOTSUP" });
      return;
    }
    // A junction to a directory outside the root: its target is read as a path below the root, as Ignition does.
    symlinkSync(outside, join(root, "etc", "junction"), "junction");
    // A directory symbolic link climbing with `..` past the root: `..` stops at the root.
    symlinkSync("..\\..\\..\\..\\..\\..\\..", join(root, "etc", "up"), "dir");
    const r = await apply(config([{ path: "/etc/junction/a.txt" }, { path: "/etc/up/b.txt" }]), root);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(readdirSync(outside), [], "nothing written through the junction outside the root");
    const below = outside.replace(/^[A-Za-z]:\\/, "").split("\\");
    assert.ok(existsSync(join(root, ...below, "a.txt")), "the junction's target, taken below the root");
    assert.ok(existsSync(join(root, "b.txt")), "`..` stops at the root");
    // A link to a network share cannot be below any root.
    symlinkSync("\\\\server\\share", join(root, "etc", "share"), "dir");
    const share = await apply(config([{ path: "/etc/share/c.txt" }]), root);
    assert.equal(share.code, 1);
    assert.match(share.stderr, /is a link to .*server.*share, which is a network share/);
  });
});

/**
 * Holds `file` open for `ms` through cmd's `>>` (no FILE_SHARE_DELETE); `held`
 * resolves once Windows refuses to replace it, the promise when the holder ended.
 */
function holdOpen(file: string, ms: number): Promise<void> & { held: Promise<void> } {
  const holder = spawn(
    "cmd.exe",
    ["/d", "/s", "/c", `""${process.execPath}" -e "setTimeout(() => {}, ${ms})" >> "${file}""`],
    { stdio: "ignore", windowsVerbatimArguments: true, windowsHide: true },
  );
  const ended = new Promise<void>((resolve) => holder.once("exit", () => resolve()));
  const probe = `${file}.probe`;
  const held = (async () => {
    const ok = await pollUntil(
      () => {
        writeFileSync(probe, readFileSync(file));
        try {
          renameSync(probe, file); // the same bytes: harmless until the holder has it open
          return false;
        } catch {
          rmSync(probe, { force: true });
          return true;
        }
      },
      30_000,
      100,
    );
    assert.ok(ok, `${file} was never held open`);
  })();
  return Object.assign(
    held.then(() => ended),
    { held },
  );
}
