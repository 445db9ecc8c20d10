/**
 * `winfleet keys generate` and `winfleet release`: the signing key pair, and a
 * signed release (agent bundle and content bundle) for nodes that pin the
 * public key in their agent config (`publicKey`).
 */
import { projectRoot, AgentError, AgentErrorCode, ed25519PrivateKeyProblem } from "../common";
import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import type { Command } from "commander";
import type * as Release from "../publish/release";
import { generateKeys } from "../release";
import { failure } from "./errors";

/** Registers `keys` and `release`. */
export function registerReleaseCommands(program: Command): void {
  const keys = program.command("keys").description("the ed25519 key pair releases are signed with");
  keys
    .command("generate")
    .description(
      "write a new key pair: PREFIX.key (private, mode 0600) and PREFIX.pub (public, for agent configs' publicKey)",
    )
    .requiredOption("--out <prefix>", "path prefix of the two files; existing files are never overwritten")
    .action(async (opts: { out: string }) => {
      try {
        const k = await generateKeys(resolve(opts.out)).catch((e: NodeJS.ErrnoException) => {
          throw new AgentError(
            AgentErrorCode.InvalidInput,
            e.code === "EEXIST"
              ? `${opts.out}.key or .pub exists already; keys are never overwritten`
              : `cannot write the keys: ${e.message}`,
          );
        });
        process.stdout.write(
          `private key ${k.privateKey} (keep it secret)\npublic key  ${k.publicKey} (key id ${k.keyId.slice(0, 16)}…)\n`,
        );
      } catch (e) {
        failure(e);
      }
    });

  program
    .command("release")
    .description(
      "build the agent bundle and the content bundle and sign both: what nodes that pin the public key accept",
    )
    .requiredOption(
      "--out <dir>",
      "where the release goes (an earlier release there is replaced; any other non-empty directory is refused)",
    )
    .requiredOption("--key <file>", "the ed25519 private key (PEM) from winfleet keys generate")
    .option("--content <dir>", "content sources", "content")
    .action(async (opts: { out: string; key: string; content: string }) => {
      try {
        const privateKeyPem = await readFile(resolve(opts.key), "utf8").catch((e: NodeJS.ErrnoException) => {
          throw new AgentError(
            AgentErrorCode.InvalidInput,
            `--key ${opts.key}: cannot read it (${e.code ?? e.message})`,
          );
        });
        // Refused before the build, which takes seconds, rather than when the bundles are signed.
        const problem = ed25519PrivateKeyProblem(privateKeyPem);
        if (problem !== undefined) throw new AgentError(AgentErrorCode.InvalidInput, `--key ${opts.key} ${problem}`);
        // Loaded here: esbuild and the content build are only needed by this command.
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        const { release } = require("../publish/release") as typeof Release;
        const r = await release({
          repo: projectRoot(),
          contentDir: resolve(opts.content),
          out: resolve(opts.out),
          privateKeyPem,
        });
        process.stdout.write(
          `release ${r.version} in ${opts.out}: agent/ (${r.agentFiles} files) and content/ (${r.contentFiles} files), signed with key ${r.keyId.slice(0, 16)}…\n`,
        );
        process.stdout.write(
          `agent archive ${r.archive.file}: sha256 ${r.archive.sha256} (a stack's agent.bundle, once uploaded)\n`,
        );
      } catch (e) {
        failure(e);
      }
    });
}
