/**
 * What `winfleet render` runs once its options are parsed: render the stack
 * under Pulumi's mock runtime and write it out. A module of its own because it
 * is the only part of the operator's command line that loads Pulumi (and the
 * Azure and Kubernetes providers, 50 MB of JavaScript): the command line
 * requires it only when `render` runs, and the operator bundle ships it as a
 * second file, so every other command starts without it. It reports its own
 * failures, so the errors it recognises are the classes it was built with.
 */
import { resolve } from "node:path";
import { assertReplaceable } from "../common";
import { RENDER_SHAPE, renderStack, writeRender } from "../../infra/render";
import { failure, printError } from "./errors";

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
