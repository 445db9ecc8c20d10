/**
 * PowerShell syntax checking without PowerShell: scripts are parsed with
 * tree-sitter's PowerShell grammar, and every ERROR or MISSING node is a
 * syntax error. Used by `winfleet content validate` and by the tests that
 * check content and rendered bootstraps. The grammar rejects a few valid
 * constructs (several `switch` clauses on one line, a `param()` block on the
 * same line as its function's body); content writes those on separate lines.
 */
import type Parser from "tree-sitter";
import { importExternal } from "../common/import-external";

/** One syntax error, 1-based. */
export interface PowerShellSyntaxError {
  readonly line: number;
  readonly column: number;
  /** The source text the parser could not place (shortened). */
  readonly text: string;
  readonly kind: "error" | "missing";
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
    const { default: language } = await importExternal<{ default: Parser.Language }>("tree-sitter-powershell/bindings/node/index.js");
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

function collectErrors(node: Parser.SyntaxNode, source: string, out: PowerShellSyntaxError[]): void {
  if (!node.hasError && !node.isMissing) return;
  if (node.isMissing || node.type === "ERROR") {
    const text = source.slice(node.startIndex, Math.min(node.endIndex, node.startIndex + 60)).replace(/\s+/g, " ");
    out.push({
      line: node.startPosition.row + 1,
      column: node.startPosition.column + 1,
      text: node.isMissing ? `missing ${node.type}` : text,
      kind: node.isMissing ? "missing" : "error",
    });
    if (node.type === "ERROR") return;
  }
  for (const child of node.children) collectErrors(child, source, out);
}

/** Parses `source`; `errors` is empty exactly when the grammar accepts all of it. */
export async function parsePowerShell(source: string): Promise<ParsedPowerShell> {
  const p = await parser();
  // tree-sitter's default input buffer is 32 KiB; larger scripts need a larger one.
  const tree = p.parse(source, undefined, { bufferSize: Math.max(32 * 1024, Buffer.byteLength(source) * 2 + 1024) });
  const errors: PowerShellSyntaxError[] = [];
  collectErrors(tree.rootNode, source, errors);
  return { tree, errors };
}

/** The syntax errors of `source`, formatted `line:column: text`. */
export async function powerShellSyntaxErrors(source: string): Promise<string[]> {
  const { errors } = await parsePowerShell(source);
  return errors.map((e) => `${e.line}:${e.column}: ${e.kind === "missing" ? e.text : `cannot parse "${e.text}"`}`);
}
