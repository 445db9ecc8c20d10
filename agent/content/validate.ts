/**
 * `winfleet content validate`: every problem in a content tree, not just the
 * first — templates that do not parse or name packages that do not exist,
 * metadata that does not parse or disagrees with its directory, duplicate
 * templates, components that do not compile.
 */
import { existsSync } from "node:fs";
import { relative } from "node:path";
import { type Issue, ValidationError } from "../common";
import { type CompiledComponent, DEFAULT_EMBED_LIMIT, compileComponent } from "./compile";
import { readFile } from "node:fs/promises";
import { parseMetadata, parseTemplate } from "./load";
import { powerShellParserAvailable, powerShellSyntaxErrors } from "./powershell-syntax";
import { type ComponentMetadata, type Template, splitPackageRef } from "./schema";
import { type ComponentSource, readContentTree } from "./source";

/** What validation found, and the parsed content it could read. */
export interface ContentCheck {
  readonly problems: readonly Issue[];
  readonly templates: readonly Template[];
  readonly components: readonly {
    readonly source: ComponentSource;
    readonly metadata: ComponentMetadata;
    readonly compiled: CompiledComponent;
  }[];
}

/** Validates the content tree at `contentDir`. */
export async function validateContent(contentDir: string, embedLimit = DEFAULT_EMBED_LIMIT): Promise<ContentCheck> {
  const { templates: templateSources, components: componentSources } = await readContentTree(contentDir);
  const problems: Issue[] = [];
  // A mistyped --content would otherwise "succeed" with an empty bundle.
  if (templateSources.length === 0 && componentSources.length === 0) {
    const why = existsSync(contentDir) ? "has no templates/ and no components/" : "does not exist";
    problems.push({ path: "", message: `${contentDir} ${why}: not a content tree`, severity: "error" });
  }
  const rel = (file: string): string => relative(contentDir, file).split("\\").join("/");
  const collect = (subject: string, e: unknown): void => {
    if (!(e instanceof ValidationError)) throw e;
    problems.push(...e.issues.map((i) => ({ ...i, path: i.path === "" ? subject : `${subject}: ${i.path}` })));
  };

  const components: { source: ComponentSource; metadata: ComponentMetadata; compiled: CompiledComponent }[] = [];
  for (const source of componentSources) {
    const subject = rel(source.metadataFile);
    if (source.metadataText === undefined) {
      problems.push({
        path: subject,
        message: "missing: every component version needs a metadata.json",
        severity: "error",
      });
      continue;
    }
    try {
      const metadata = parseMetadata(source.metadataText, subject).value;
      if (metadata.name !== source.name)
        problems.push({
          path: `${subject}: name`,
          message: `is "${metadata.name}" but the directory says "${source.name}"`,
          severity: "error",
        });
      if (metadata.version !== source.version)
        problems.push({
          path: `${subject}: version`,
          message: `is "${metadata.version}" but the directory says "${source.version}"`,
          severity: "error",
        });
      if (metadata.install.commands.length === 0)
        problems.push({
          path: `${subject}: install.commands`,
          message: "is empty: the component installs files only",
          severity: "warning",
        });
      problems.push(...(await powerShellProblems(source, metadata, rel)));
      components.push({ source, metadata, compiled: await compileComponent(source, metadata, embedLimit) });
    } catch (e) {
      collect(subject, e);
    }
  }

  const available = new Set(components.map((c) => `${c.metadata.name}_${c.metadata.version}`));
  const templates: Template[] = [];
  const seen = new Map<string, string>();
  for (const t of templateSources) {
    const subject = rel(t.file);
    try {
      const template = parseTemplate(t.text, subject).value;
      const key = `${template.name}@${template.version}`;
      const other = seen.get(key);
      if (other)
        problems.push({
          path: subject,
          message: `duplicates template ${template.name} ${template.version} of ${other}`,
          severity: "error",
        });
      seen.set(key, subject);
      const names = new Map<string, number>();
      template.packages.forEach((ref, i) => {
        const { name } = splitPackageRef(ref);
        const first = names.get(name);
        if (first !== undefined)
          problems.push({
            path: `${subject}: packages[${i}]`,
            message: `names ${name} again (first at packages[${first}]): one version per component`,
            severity: "error",
          });
        names.set(name, i);
        if (!available.has(ref)) {
          const versions = components.filter((c) => c.metadata.name === name).map((c) => c.metadata.version);
          const hint = versions.length > 0 ? `; available: ${versions.join(", ")}` : "; no such component";
          problems.push({
            path: `${subject}: packages[${i}]`,
            message: `${ref} does not exist${hint}`,
            severity: "error",
          });
        }
      });
      templates.push(template);
    } catch (e) {
      collect(subject, e);
    }
  }
  return { problems, templates, components };
}

const POWERSHELL_FILE = /\.(ps1|psm1|psd1)$/i;
const SECTIONS = ["install", "uninstall", "pre_upgrade", "post_upgrade"] as const;
const ROLES = ["lprecmds", "commands", "lpstcmds"] as const;

/** PowerShell that does not parse: in shipped scripts, and in the commands of a `shell: powershell` component. */
async function powerShellProblems(
  source: ComponentSource,
  metadata: ComponentMetadata,
  rel: (file: string) => string,
): Promise<Issue[]> {
  const out: Issue[] = [];
  const scripts = source.files.filter((file) => POWERSHELL_FILE.test(file.rel));
  if ((scripts.length > 0 || metadata.shell === "powershell") && !(await powerShellParserAvailable())) {
    return [
      {
        path: rel(source.metadataFile),
        message:
          "PowerShell syntax not checked: tree-sitter-powershell cannot load here (winfleet content validate checks it)",
        severity: "warning",
      },
    ];
  }
  for (const f of scripts) {
    for (const e of await powerShellSyntaxErrors(await readFile(f.abs, "utf8"))) {
      out.push({ path: `${rel(f.abs)}:${e}`, message: "PowerShell syntax error", severity: "error" });
    }
  }
  if (metadata.shell !== "powershell") return out;
  for (const section of SECTIONS) {
    for (const role of ROLES) {
      for (const [i, command] of metadata[section][role].entries()) {
        for (const e of await powerShellSyntaxErrors(command)) {
          out.push({
            path: `${rel(source.metadataFile)}: ${section}.${role}[${i}]`,
            message: `PowerShell syntax error at ${e}`,
            severity: "error",
          });
        }
      }
    }
  }
  return out;
}
