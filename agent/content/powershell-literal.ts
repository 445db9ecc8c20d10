/**
 * The value of a PowerShell data expression — the hashtables, arrays, strings,
 * numbers and booleans content builds configuration files from — read from its
 * tree-sitter tree, so a check can look at the configuration a script writes
 * without running the script. Variables take the values given, or stand as
 * `$name` placeholders; anything that is not plain data (a command other than
 * Join-Path, a method call, an operator other than -split) makes the whole
 * expression {@link NotLiteral}.
 */
import type Parser from "tree-sitter";
import { parsePowerShell } from "./powershell-syntax";

type Node = Parser.SyntaxNode;

/** A PowerShell data value, as ConvertTo-Json would write it. */
export type PsValue = string | number | boolean | null | readonly PsValue[] | { readonly [key: string]: PsValue };

/** The expression is not plain data. */
export class NotLiteral extends Error {}

/** Variable values by lower-case name (without `$`). */
export type PsVariables = ReadonlyMap<string, PsValue>;

const placeholder = (name: string): string => `$${name}`;

/** A value as PowerShell would put it into a string: arrays space-joined, hashtables refused. */
function text(value: PsValue): string {
  if (value === null) return "";
  if (Array.isArray(value)) return (value as readonly PsValue[]).map(text).join(" ");
  if (typeof value === "object") throw new NotLiteral("a hashtable used as a string");
  return String(value);
}

function expandString(node: Node, vars: PsVariables): string {
  const t = node.text;
  if (t.startsWith("'") || t.startsWith("@'")) {
    return t.startsWith("@'")
      ? t
          .slice(2, -2)
          .replace(/^\r?\n/, "")
          .replace(/\r?\n$/, "")
      : t.slice(1, -1).replace(/''/g, "'");
  }
  const body = t.startsWith('@"')
    ? t
        .slice(2, -2)
        .replace(/^\r?\n/, "")
        .replace(/\r?\n$/, "")
    : t.slice(1, -1);
  const start = node.startIndex + (t.startsWith('@"') ? t.indexOf("\n") + 1 : 1);
  let out = "";
  let at = 0;
  for (const v of node.descendantsOfType("variable")) {
    out += body.slice(at, v.startIndex - start);
    const value = variable(v.text, vars);
    out += text(value);
    at = v.endIndex - start;
  }
  if (node.descendantsOfType("sub_expression").length > 0) throw new NotLiteral(`"${t}" holds a subexpression`);
  return (out + body.slice(at))
    .replace(/`(.)/g, (_, c: string) => ({ n: "\n", r: "\r", t: "\t", "0": "\0" })[c] ?? c)
    .replace(/""/g, '"');
}

function variable(text: string, vars: PsVariables): PsValue {
  const name = text.replace(/^\$\{?|\}$/g, "").toLowerCase();
  if (name === "true") return true;
  if (name === "false") return false;
  if (name === "null") return null;
  const value = vars.get(name);
  return value === undefined ? placeholder(name) : value;
}

// The values of an @(…)'s statements, flattened as PowerShell's array subexpression flattens them.
function statements(list: Node | undefined, vars: PsVariables): PsValue[] {
  if (!list) return [];
  return list.namedChildren
    .filter((c) => c.type !== "comment")
    .flatMap((s) => {
      const v = literalValue(s, vars);
      return Array.isArray(v) ? (v as PsValue[]) : [v];
    });
}

function joinPath(command: Node, vars: PsVariables): string {
  const elements =
    command.children
      .find((c) => c.type === "command_elements")
      ?.namedChildren.filter((c) => c.type !== "command_argument_sep") ?? [];
  if (elements.length !== 2 || elements.some((e) => e.type === "command_parameter"))
    throw new NotLiteral(`${command.text}: only Join-Path <parent> <child> is read`);
  const [parent, child] = elements.map((e) => text(literalValue(e, vars)));
  return `${(parent ?? "").replace(/\\$/, "")}\\${(child ?? "").replace(/^\\/, "")}`;
}

/** The value of `node`, throwing {@link NotLiteral} where it is not plain data. */
export function literalValue(node: Node, vars: PsVariables = new Map()): PsValue {
  const named = node.namedChildren.filter((c) => c.type !== "comment");
  switch (node.type) {
    case "string_literal":
      return expandString(node.namedChildren[0] ?? node, vars);
    case "expandable_string_literal":
    case "verbatim_string_characters":
    case "expandable_here_string_literal":
    case "verbatim_here_string_characters":
      return expandString(node, vars);
    case "integer_literal":
    case "decimal_integer_literal":
    case "real_literal":
      return Number(node.text);
    case "variable":
      return variable(node.text, vars);
    case "hash_literal_expression": {
      const out: Record<string, PsValue> = {};
      const body = named.find((c) => c.type === "hash_literal_body");
      for (const entry of (body?.namedChildren ?? []).filter((e) => e.type === "hash_entry")) {
        const [key, value] = entry.namedChildren;
        if (!key || !value) throw new NotLiteral(entry.text);
        const inner = key.type === "key_expression" ? key.namedChildren[0] : key;
        const k = !inner || inner.type === "simple_name" ? key.text : text(literalValue(inner, vars));
        out[k] = literalValue(value, vars);
      }
      return out;
    }
    case "array_expression":
      return statements(
        named.find((c) => c.type === "statement_list"),
        vars,
      );
    case "array_literal_expression":
      if (named.length === 1) return literalValue(named[0] as Node, vars);
      return named.map((c) => literalValue(c, vars));
    case "cast_expression": {
      const type = named.find((c) => c.type === "type_literal")?.text.toLowerCase();
      const operand = named.find((c) => c.type !== "type_literal");
      if (!operand || !["[ordered]", "[string]", "[int]", "[bool]", "[string[]]", "[object[]]"].includes(type ?? ""))
        throw new NotLiteral(node.text);
      const value = literalValue(operand, vars);
      // A conversion changes what ConvertTo-Json writes: "4096" becomes 4096 (a placeholder stays as it is).
      if (type === "[int]" && typeof value === "string" && /^-?\d+$/.test(value.trim())) return Number(value);
      if (type === "[string]" && (typeof value === "number" || typeof value === "boolean")) return String(value);
      return value;
    }
    case "comparison_expression": {
      if (named.length === 1) return literalValue(named[0] as Node, vars);
      const op = named.find((c) => c.type === "comparison_operator")?.text.toLowerCase();
      const [left, right] = named.filter((c) => c.type !== "comparison_operator");
      if (op !== "-split" || !left || !right) throw new NotLiteral(node.text);
      const subject = literalValue(left, vars);
      const separator = text(literalValue(right, vars));
      if (typeof subject !== "string") throw new NotLiteral(node.text);
      // A placeholder stands for one element: its value is not known here.
      return subject.startsWith("$") ? [subject] : subject.split(new RegExp(separator));
    }
    case "command": {
      if (node.children.find((c) => c.type === "command_name")?.text.toLowerCase() !== "join-path")
        throw new NotLiteral(node.text);
      return joinPath(node, vars);
    }
    case "pipeline":
    case "pipeline_chain":
    case "parenthesized_expression":
    case "unary_expression":
    case "expression_with_unary_operator":
    case "logical_expression":
    case "bitwise_expression":
    case "additive_expression":
    case "multiplicative_expression":
    case "format_expression":
    case "range_expression":
    case "left_assignment_expression":
      if (named.length === 1) return literalValue(named[0] as Node, vars);
      throw new NotLiteral(`${node.type} [${named.map((c) => c.type).join(" ")}]: ${node.text.slice(0, 60)}`);
    default:
      throw new NotLiteral(`${node.type}: ${node.text.slice(0, 60)}`);
  }
}

/**
 * The value the last top-level `$<variable> = …` in `source` assigns, with
 * `vars` for the variables it reads; undefined when there is no such
 * assignment or its value is not plain data.
 */
export async function assignedLiteral(
  source: string,
  variableName: string,
  vars: PsVariables = new Map(),
): Promise<PsValue | undefined> {
  const { tree } = await parsePowerShell(source);
  const target = variableName.toLowerCase();
  let value: PsValue | undefined;
  for (const a of tree.rootNode.descendantsOfType("assignment_expression")) {
    const left = a.namedChildren[0];
    if (left?.text.trim().toLowerCase() !== `$${target}`) continue;
    const right = a.namedChildren[a.namedChildren.length - 1];
    try {
      value = right ? literalValue(right, vars) : undefined;
    } catch (e) {
      if (!(e instanceof NotLiteral)) throw e;
      value = undefined;
    }
  }
  return value;
}
