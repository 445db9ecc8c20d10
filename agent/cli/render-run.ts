/**
 * What `winfleet render` runs once its options are parsed: render the stack
 * under Pulumi's mock runtime and write it out (and what `operator-stack` and
 * `preflight` run, which render too). A module of its own because it
 * is the only part of the operator's command line that loads Pulumi (and the
 * Azure and Kubernetes providers, 50 MB of JavaScript): the command line
 * requires it only when `render` runs, and the operator bundle ships it as a
 * second file, so every other command starts without it. It reports its own
 * failures, so the errors it recognises are the classes it was built with.
 */
import { resolve } from "node:path";
import { assertReplaceable } from "../common";
import { clusterObjects } from "../../infra/public";
import { type OperatorStackArgs, operatorStackYaml } from "../../infra/operator-stack";
import { RENDER_SHAPE, renderStack, writeRender } from "../../infra/render";
import { failure, printError } from "./errors";

// `winfleet preflight` renders too: its run lives in this file, the one that carries Pulumi.
export { azCliToken, runPreflight } from "../../infra/preflight-run";

/** The parsed `winfleet render` options. */
export interface RenderOptions {
  readonly stack: string;
  readonly out: string;
  /** Values for secure config keys, by key. */
  readonly secrets: Readonly<Record<string, string>>;
}

/** Renders `opts.stack` into `opts.out`; returns the exit code, having said what happened. */
export async function runRender(opts: RenderOptions): Promise<number> {
  try {
    // Refused before the program runs, not after: rendering takes seconds.
    await assertReplaceable(resolve(opts.out), RENDER_SHAPE);
    const rendered = await renderStack(opts.stack, { secrets: opts.secrets });
    await writeRender(rendered, resolve(opts.out));
    process.stdout.write(
      `rendered stack ${rendered.stack.stack}: ${rendered.resources.length} resources into ${rendered.files.size} files in ${opts.out}\n`,
    );
    return 0;
  } catch (e) {
    // The program's own refusals (pulumi.RunError) are messages for the user, not crashes.
    if (e instanceof Error && (e as { __pulumiRunError?: boolean }).__pulumiRunError === true) {
      return printError(`${e.message}\nnothing was written to ${opts.out}`);
    }
    return failure(e);
  }
}

/**
 * `winfleet operator-stack`: renders `stackFile` (a stack name or a stack file) to learn what its
 * program creates in the cluster, and prints the operator's Stack with the access that needs.
 */
export async function runOperatorStack(a: OperatorStackArgs & { readonly stackFile: string }): Promise<number> {
  try {
    const rendered = await renderStack(a.stackFile);
    const objects = clusterObjects(rendered.resources);
    if (objects.length === 0)
      return printError(`stack ${rendered.stack.stack} deploys nothing to a cluster: it needs no operator Stack`);
    process.stdout.write(operatorStackYaml(a, objects));
    return 0;
  } catch (e) {
    if (e instanceof Error && (e as { __pulumiRunError?: boolean }).__pulumiRunError === true)
      return printError(e.message);
    return failure(e);
  }
}
