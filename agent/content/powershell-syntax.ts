/**
 * PowerShell syntax checking without PowerShell: scripts are parsed with
 * tree-sitter's PowerShell grammar, and on top of it the rules of
 * ./powershell-rules report what Windows PowerShell 5.1's own parser rejects
 * (the grammar is more lenient), each under PowerShell's error id; every
 * ERROR or MISSING node the rules do not explain is an error too. Used by `winfleet content validate` and by the tests
 * that
 * check content and rendered bootstraps. The grammar rejects a few valid
 * constructs (several `switch` clauses on one line, a `param()` block on the
 * same line as its function's body); content writes those on separate lines.
 */
import type Parser from "tree-sitter";
import { importExternal } from "../common";
import { powerShellRuleErrors } from "./powershell-rules";

/** One syntax error, 1-based. */
export interface PowerShellSyntaxError {
  readonly line: number;
  readonly column: number;
  /** PowerShell's error id for it (ParserStrings), e.g. InvalidVariableReferenceWithDrive. */
  readonly id: string;
  /** What is wrong, naming the source text. */
  readonly text: string;
}

/** A parsed script. */
export interface ParsedPowerShell {
  readonly tree: Parser.Tree;
  readonly errors: readonly PowerShellSyntaxError[];
}

let parserPromise: Promise<Parser> | undefined;

// The grammar ships as an ES module with a native binding; load it once, lazily,
// so commands that never check PowerShell never load it.
async function parser(): Promise<Parser> {
  parserPromise ??= (async () => {
    const { default: ParserClass } = await importExternal<{ default: typeof Parser }>("tree-sitter");
    const { default: language } = await importExternal<{ default: Parser.Language }>(
      "tree-sitter-powershell/bindings/node/index.js",
    );
    const p = new ParserClass();
    p.setLanguage(language);
    return p;
  })();
  return parserPromise;
}

/**
 * Whether the parser loads here. It does not where no node_modules holds
 * tree-sitter (the agent's bundle on a node carries no native bindings): content
 * reaching a node was checked when it was built, and the operator's
 * `winfleet content validate` checks it again.
 */
export async function powerShellParserAvailable(): Promise<boolean> {
  try {
    await parser();
    return true;
  } catch {
    parserPromise = undefined;
    return false;
  }
}

function position(source: string, offset: number): { line: number; column: number } {
  const before = source.slice(0, offset);
  const line = before.split("\n").length;
  return { line, column: offset - (before.lastIndexOf("\n") + 1) + 1 };
}

/** Parses `source`; `errors` is empty exactly when the grammar accepts all of it. */
export async function parsePowerShell(source: string): Promise<ParsedPowerShell> {
  const p = await parser();
  // tree-sitter's default input buffer is 32 KiB; larger scripts need a larger one.
  const tree = p.parse(source, undefined, { bufferSize: Math.max(32 * 1024, Buffer.byteLength(source) * 2 + 1024) });
  const errors = powerShellRuleErrors(source, tree.rootNode).map((e) => ({
    ...position(source, e.offset),
    id: e.id,
    text: e.message,
  }));
  return { tree, errors };
}

/** The syntax errors of `source`, formatted `line:column: text`. */
export async function powerShellSyntaxErrors(source: string): Promise<string[]> {
  const { errors } = await parsePowerShell(source);
  return errors.map((e) => `${e.line}:${e.column}: ${e.id}: ${e.text}`);
}
