/** `winfleet content build|validate`: a thin shell over the content build. */
import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import type { Command } from "commander";
import { writeFileAtomic, formatIssues } from "../common";
import { analyzeContent, renderContentReference, buildContent, validateContent } from "../content";
import { failure, printError } from "./errors";

/** Registers the `content` command group. */
export function registerContentCommands(program: Command): void {
  const content = program.command("content").description("validate and build templates and components");

  content
    .command("validate")
    .description("report every problem in the content tree; exit 1 if there is any error")
    .option("--content <dir>", "content tree", "content")
    .action(async (opts: { content: string }) => {
      const { problems, templates, components } = await validateContent(resolve(opts.content));
      if (problems.length > 0) process.stderr.write(`${formatIssues(problems)}\n`);
      const errors = problems.filter((p) => p.severity === "error").length;
      process.stdout.write(
        `${templates.length} templates, ${components.length} components, ${errors} errors, ${problems.length - errors} warnings\n`,
      );
      if (errors > 0) process.exitCode = 1;
    });

  content
    .command("build")
    .description("compile components to Ignition and write a bundle with a SHA-256 manifest (deterministic)")
    .option("--content <dir>", "content tree", "content")
    .option(
      "--out <dir>",
      "bundle directory (an earlier bundle there is replaced atomically; any other non-empty directory is refused)",
      "dist/content",
    )
    .option(
      "--embed-limit <bytes>",
      "embed files up to this size; ship larger ones in the bundle",
      (v) => Number.parseInt(v, 10),
      64 * 1024,
    )
    .action(async (opts: { content: string; out: string; embedLimit: number }) => {
      try {
        const manifest = await buildContent(resolve(opts.content), resolve(opts.out), opts.embedLimit);
        process.stdout.write(
          `built ${manifest.templates.length} templates, ${manifest.components.length} components, ${manifest.files.length} shipped files into ${opts.out}\n`,
        );
      } catch (e) {
        failure(e);
      }
    });

  content
    .command("docs")
    .description(
      "generate the content reference (templates, components, versions, variables, host changes read from the scripts)",
    )
    .option("--content <dir>", "content tree", "content")
    .option("--out <file>", "where to write it ('-' for stdout)", "docs/content.md")
    .option("--check", "write nothing; exit 1 when --out differs from what would be generated")
    .action(async (opts: { content: string; out: string; check?: boolean }) => {
      try {
        const text = renderContentReference(await analyzeContent(resolve(opts.content)));
        if (opts.out === "-") {
          process.stdout.write(text);
        } else if (opts.check) {
          const current = await readFile(resolve(opts.out), "utf8").catch(() => undefined);
          if (current !== text) {
            printError(`${opts.out} is stale: run winfleet content docs --content ${opts.content} --out ${opts.out}`);
          }
        } else {
          await writeFileAtomic(resolve(opts.out), text, { makeParents: true });
          process.stdout.write(`wrote ${opts.out}\n`);
        }
      } catch (e) {
        failure(e);
      }
    });
}
