/**
 * What a PowerShell script does, read from its tree-sitter parse tree rather
 * than from its text: the commands it calls (with their arguments, the
 * function they sit in and what happens to their output), its assignments,
 * functions, environment reads, type references, throws and bare output
 * statements. The content checks and the generated content reference are
 * built on these facts, so they see what PowerShell would run, not what a
 * regular expression happens to match.
 */
import type Parser from "tree-sitter";
import { NotLiteral, type PsValue, literalValue } from "./powershell-literal";
import { parsePowerShell } from "./powershell-syntax";

type Node = Parser.SyntaxNode;

/** One argument of a command: `-Name 'x'` or a positional value. */
export interface ScriptArgument {
  /** The parameter it binds to, lower-case without the dash; undefined for a positional value. */
  readonly parameter?: string;
  /** The value's source text ("" for a switch). */
  readonly text: string;
  /** Contents of the string literals inside the value. */
  readonly strings: readonly string[];
  /** Normalised names of the variables the value reads (see {@link normaliseVariable}). */
  readonly variables: readonly string[];
}

/** What happens to a command's output. */
export type OutputUse = "assigned" | "discarded" | "piped" | "statement" | "nested";

/** One command invocation. */
export interface ScriptCommand {
  /** The command name as written, or for `& expr` / `. expr` the target expression's text. */
  readonly name: string;
  /** `&` or `.` when invoked through an operator. */
  readonly operator?: "&" | ".";
  /** For operator invocations: what the target is. */
  readonly targetKind?: "name" | "string" | "variable" | "expression";
  /** String literals inside an operator invocation's target. */
  readonly targetStrings: readonly string[];
  readonly args: readonly ScriptArgument[];
  /** 1-based line. */
  readonly line: number;
  /** The function the call sits in, if any. */
  readonly inFunction?: string;
  readonly use: OutputUse;
  readonly text: string;
  /** The statement that holds the call, and the one after it in the same block. */
  readonly statementText: string;
  readonly nextStatementText?: string;
}

/** `$x = …` (also `+=`, and `foreach ($x in …)`), with what the right-hand side holds. */
export interface ScriptAssignment {
  /** Normalised name of the variable assigned (the base variable of `$x.y = …`). */
  readonly variable: string;
  readonly valueText: string;
  readonly strings: readonly string[];
  readonly variables: readonly string[];
  /** Names of the commands the right-hand side calls, as written. */
  readonly commands: readonly string[];
  /** When the right-hand side is itself a command pipeline (not an expression around one): its first command. */
  readonly valueCommand?: string;
  /**
   * The right-hand side's value when it is plain data (variables as `$name` placeholders; see ./powershell-literal).
   */
  readonly literal?: PsValue;
  readonly line: number;
  readonly inFunction?: string;
}

/** A function definition. */
export interface ScriptFunction {
  readonly name: string;
  /** Normalised parameter names. */
  readonly parameters: readonly string[];
  readonly line: number;
  /** Whether a `return <value>` appears in its body. */
  readonly returnsValue: boolean;
}

/**
 * Something that reads variables without a command: `throw …`, an expression
 * statement (its value is written out) or a method-call statement
 * (`[IO.File]::WriteAllText(…)`: a side effect whose result, if any, is written out).
 */
export interface ScriptEmission {
  readonly kind: "throw" | "output" | "method";
  readonly text: string;
  readonly variables: readonly string[];
  readonly line: number;
  readonly inFunction?: string;
}

/** Everything the checks read about one script. */
export interface ScriptFacts {
  readonly syntaxErrors: readonly string[];
  readonly commands: readonly ScriptCommand[];
  readonly assignments: readonly ScriptAssignment[];
  readonly functions: readonly ScriptFunction[];
  /** Environment variables read (`$env:NAME`), as written. */
  readonly envReads: readonly string[];
  /** .NET type names referenced by `[Type]` literals and `New-Object`, lower-case. */
  readonly types: readonly { readonly name: string; readonly line: number; readonly inFunction?: string }[];
  readonly emissions: readonly ScriptEmission[];
  /** The last top-level statement's text (content entry scripts end in `exit`). */
  readonly lastStatement: string;
  /** The literal codes of every `exit N` anywhere in the script. */
  readonly exits: readonly number[];
}

const SCOPES = /^(script|global|local|private|using):/;
const AUTOMATIC = new Set([
  "true",
  "false",
  "null",
  "_",
  "psitem",
  "args",
  "input",
  "matches",
  "psscriptroot",
  "pscmdlet",
  "psversiontable",
  "this",
]);

/**
 * `$env:Foo` → `env:foo`, `$script:x` → `x`, `${y}` → `y`, `@args` → `args`; lower-case (PowerShell names are
 * case-insensitive).
 */
export function normaliseVariable(text: string): string {
  let v = text.replace(/^[$@]/, "");
  if (v.startsWith("{") && v.endsWith("}")) v = v.slice(1, -1);
  return v.toLowerCase().replace(SCOPES, "");
}

function descendants(node: Node, type: string): Node[] {
  return node.descendantsOfType(type);
}

/**
 * The literal value of a string_literal node (quotes removed, '' unescaped; expandable strings keep their `$vars` as
 * text).
 */
function stringValue(node: Node): string {
  const t = node.text;
  if (t.startsWith("@'") || t.startsWith('@"'))
    return t
      .slice(2, -2)
      .replace(/^\r?\n/, "")
      .replace(/\r?\n$/, "");
  if (t.startsWith("'")) return t.slice(1, -1).replace(/''/g, "'");
  if (t.startsWith('"')) return t.slice(1, -1);
  return t;
}

function stringsIn(node: Node): string[] {
  const own = node.type === "string_literal" ? [node] : [];
  return [...own, ...descendants(node, "string_literal")].map(stringValue);
}

function variablesIn(node: Node): string[] {
  const own = node.type === "variable" ? [node] : [];
  const names = [...own, ...descendants(node, "variable")].map((v) => normaliseVariable(v.text));
  return [...new Set(names.filter((n) => !AUTOMATIC.has(n)))];
}

function enclosingFunction(node: Node): string | undefined {
  for (let p = node.parent; p; p = p.parent) {
    if (p.type === "function_statement") return p.children.find((c) => c.type === "function_name")?.text;
  }
  return undefined;
}

/** The statement (a child of a statement_list) that holds `node`. */
function statementOf(node: Node): Node {
  let n = node;
  while (n.parent && n.parent.type !== "statement_list") n = n.parent;
  return n;
}

function nextStatement(statement: Node): Node | undefined {
  let s = statement.nextNamedSibling;
  while (s && s.type === "comment") s = s.nextNamedSibling;
  return s ?? undefined;
}

function commandArguments(command: Node): ScriptArgument[] {
  const elements = command.children.find((c) => c.type === "command_elements");
  if (!elements) return [];
  const parts = elements.namedChildren.filter(
    (c) => c.type !== "command_argument_sep" && c.type !== "redirection" && c.type !== "comment",
  );
  const out: ScriptArgument[] = [];
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i] as Node;
    if (part.type === "command_parameter") {
      const parameter = part.text.replace(/^-/, "").replace(/:$/, "").toLowerCase();
      const next = parts[i + 1];
      if (next && next.type !== "command_parameter") {
        out.push({ parameter, text: next.text, strings: stringsIn(next), variables: variablesIn(next) });
        i++;
      } else {
        out.push({ parameter, text: "", strings: [], variables: [] });
      }
    } else {
      out.push({ text: part.text, strings: stringsIn(part), variables: variablesIn(part) });
    }
  }
  return out;
}

function outputUse(command: Node): OutputUse {
  const chain = command.parent;
  if (!chain) return "nested";
  const commands = chain.namedChildren.filter((c) => c.type === "command");
  const index = commands.indexOf(command);
  if (index >= 0 && index < commands.length - 1) {
    const last = commands[commands.length - 1];
    return last?.children.find((c) => c.type === "command_name")?.text.toLowerCase() === "out-null"
      ? "discarded"
      : "piped";
  }
  const pipeline = chain.parent;
  const holder = pipeline?.parent;
  if (!pipeline || !holder) return "nested";
  if (holder.type === "assignment_expression") {
    const target = holder.children.find((c) => c.type === "left_assignment_expression");
    return target && normaliseVariable(target.text.trim()) === "null" ? "discarded" : "assigned";
  }
  if (holder.type === "statement_list") return isBlockStatementList(holder) ? "statement" : "nested";
  // [void](…) throws the value away.
  for (let p: Node | null = holder; p && p.type !== "statement_list"; p = p.parent) {
    if (p.type === "cast_expression" && /^\[void\]/i.test(p.text)) return "discarded";
  }
  return "nested";
}

function commandFact(node: Node): ScriptCommand {
  const operatorNode = node.children.find((c) => c.type === "command_invokation_operator");
  const nameNode = node.children.find((c) => c.type === "command_name");
  const targetNode = node.children.find((c) => c.type === "command_name_expr");
  let name = nameNode?.text ?? targetNode?.text ?? "";
  let targetKind: ScriptCommand["targetKind"];
  let targetStrings: string[] = [];
  if (operatorNode && targetNode) {
    const inner = targetNode.namedChildren[0];
    const strings = stringsIn(targetNode);
    targetStrings = strings;
    if (targetNode.descendantsOfType("command").length > 0 || targetNode.text.startsWith("("))
      targetKind = "expression";
    else if (inner?.type === "path_command_name" && inner.namedChildren[0]?.type === "variable")
      targetKind = "variable";
    else if (strings.length > 0) targetKind = "string";
    else targetKind = "name";
    if (targetKind === "string") name = strings[0] ?? name;
  }
  const statement = statementOf(node);
  const next = nextStatement(statement);
  const inFunction = enclosingFunction(node);
  return {
    name,
    ...(operatorNode ? { operator: operatorNode.text.trim() as "&" | "." } : {}),
    ...(targetKind ? { targetKind } : {}),
    targetStrings,
    args: commandArguments(node),
    line: node.startPosition.row + 1,
    ...(inFunction ? { inFunction } : {}),
    use: outputUse(node),
    text: node.text,
    statementText: statement.text,
    ...(next ? { nextStatementText: next.text } : {}),
  };
}

// The first command of a pipeline node that is a command pipeline (`Get-X | Y`), not an expression.
function pipelineCommand(value: Node): string | undefined {
  const chain = value.type === "pipeline" ? value.children.find((c) => c.type === "pipeline_chain") : undefined;
  const first = chain?.namedChildren[0];
  return first?.type === "command"
    ? (first.children.find((c) => c.type === "command_name")?.text ?? first.text)
    : undefined;
}

function assignmentFact(node: Node): ScriptAssignment | undefined {
  const target = node.children.find((c) => c.type === "left_assignment_expression");
  const value = node.children.find((c) => c.type === "pipeline" || c.type === "statement") ?? node.lastNamedChild;
  if (!target || !value) return undefined;
  const base = target.descendantsOfType("variable")[0] ?? (target.type === "variable" ? target : undefined);
  if (!base) return undefined;
  const inFunction = enclosingFunction(node);
  const valueCommand = pipelineCommand(value);
  const literal = literalOf(value);
  return {
    variable: normaliseVariable(base.text),
    valueText: value.text,
    strings: stringsIn(value),
    variables: variablesIn(value),
    commands: value
      .descendantsOfType("command")
      .map((c) => c.children.find((x) => x.type === "command_name")?.text ?? "")
      .filter((n) => n !== ""),
    ...(valueCommand ? { valueCommand } : {}),
    ...(literal !== undefined ? { literal } : {}),
    line: node.startPosition.row + 1,
    ...(inFunction ? { inFunction } : {}),
  };
}

function literalOf(value: Node): PsValue | undefined {
  try {
    return literalValue(value);
  } catch (e) {
    if (e instanceof NotLiteral) return undefined;
    throw e;
  }
}

// `foreach ($x in <collection>)` assigns each element to $x in turn.
function foreachFact(node: Node): ScriptAssignment | undefined {
  const variable = node.namedChildren.find((c) => c.type === "variable");
  const collection = node.namedChildren.find((c) => c.type === "pipeline");
  if (!variable || !collection) return undefined;
  const inFunction = enclosingFunction(node);
  const valueCommand = pipelineCommand(collection);
  return {
    variable: normaliseVariable(variable.text),
    valueText: collection.text,
    strings: stringsIn(collection),
    variables: variablesIn(collection),
    commands: collection
      .descendantsOfType("command")
      .map((c) => c.children.find((x) => x.type === "command_name")?.text ?? "")
      .filter((n) => n !== ""),
    ...(valueCommand ? { valueCommand } : {}),
    line: node.startPosition.row + 1,
    ...(inFunction ? { inFunction } : {}),
  };
}

function functionFact(node: Node): ScriptFunction {
  const name = node.children.find((c) => c.type === "function_name")?.text ?? "";
  // The parameter's own variable, not one inside its attributes ([Parameter(Mandatory = $true)]).
  const parameters = node
    .descendantsOfType("script_parameter")
    .map((p) => normaliseVariable(p.namedChildren.find((c) => c.type === "variable")?.text ?? ""));
  const returnsValue = node
    .descendantsOfType("flow_control_statement")
    .some(
      (f) =>
        /^return\b/i.test(f.text) &&
        f.namedChildren.some((c) => c.type === "pipeline") &&
        enclosingFunctionNode(f) === node,
    );
  return { name, parameters, line: node.startPosition.row + 1, returnsValue };
}

function enclosingFunctionNode(node: Node): Node | undefined {
  for (let p = node.parent; p; p = p.parent) if (p.type === "function_statement") return p;
  return undefined;
}

// A statement list of a script, function or block, not the inside of @(…) or $(…), whose value is an expression's.
function isBlockStatementList(list: Node): boolean {
  const parent = list.parent?.type;
  return parent !== "array_expression" && parent !== "sub_expression";
}

function isExpressionStatement(pipeline: Node): boolean {
  if (pipeline.parent?.type !== "statement_list" || !isBlockStatementList(pipeline.parent)) return false;
  if (pipeline.children.some((c) => c.type === "assignment_expression")) return false;
  const chain = pipeline.children.find((c) => c.type === "pipeline_chain");
  return chain !== undefined && !chain.namedChildren.some((c) => c.type === "command");
}

/** Parses `source` and reads its facts. */
export async function scriptFacts(source: string): Promise<ScriptFacts> {
  const { tree, errors } = await parsePowerShell(source);
  const root = tree.rootNode;
  const commands = descendants(root, "command").map(commandFact);
  const assignments = [
    ...descendants(root, "assignment_expression").flatMap((a) => assignmentFact(a) ?? []),
    ...descendants(root, "foreach_statement").flatMap((f) => foreachFact(f) ?? []),
  ];
  const functions = descendants(root, "function_statement").map(functionFact);
  const envReads = [
    ...new Set(
      descendants(root, "variable")
        .filter(
          (v) =>
            /^\$(\{)?env:/i.test(v.text) &&
            v.parent?.parent?.type !== "left_assignment_expression" &&
            !isAssignmentTarget(v),
        )
        .map((v) => v.text.replace(/^\$\{?env:/i, "").replace(/\}$/, "")),
    ),
  ];
  const types = [
    ...descendants(root, "type_literal").map((t) => ({ node: t, name: t.text.replace(/^\[|\]$/g, "") })),
    ...descendants(root, "command")
      .filter((c) => c.children.find((x) => x.type === "command_name")?.text.toLowerCase() === "new-object")
      .map((c) => {
        const args = commandArguments(c);
        const typeArg = args.find((a) => a.parameter === "typename") ?? args.find((a) => a.parameter === undefined);
        return { node: c, name: (typeArg?.strings[0] ?? typeArg?.text ?? "").trim() };
      }),
  ].map(({ node, name }) => {
    const inFunction = enclosingFunction(node);
    return { name: name.toLowerCase(), line: node.startPosition.row + 1, ...(inFunction ? { inFunction } : {}) };
  });
  const emissions: ScriptEmission[] = [];
  for (const f of descendants(root, "flow_control_statement").filter((n) => /^throw\b/i.test(n.text))) {
    const inFunction = enclosingFunction(f);
    emissions.push({
      kind: "throw",
      text: f.text,
      variables: variablesIn(f),
      line: f.startPosition.row + 1,
      ...(inFunction ? { inFunction } : {}),
    });
  }
  for (const p of descendants(root, "pipeline").filter(isExpressionStatement)) {
    const inFunction = enclosingFunction(p);
    const kind =
      p.descendantsOfType("invokation_expression").length > 0 && p.text.trim().endsWith(")") ? "method" : "output";
    emissions.push({
      kind,
      text: p.text,
      variables: variablesIn(p),
      line: p.startPosition.row + 1,
      ...(inFunction ? { inFunction } : {}),
    });
  }
  const top = root.children.find((c) => c.type === "statement_list");
  const statements = top ? top.namedChildren.filter((c) => c.type !== "comment") : [];
  return {
    syntaxErrors: errors.map((e) => `${e.line}:${e.column}: ${e.id}: ${e.text}`),
    commands,
    assignments,
    functions,
    envReads,
    types,
    emissions,
    lastStatement: statements[statements.length - 1]?.text ?? "",
    exits: descendants(root, "flow_control_statement").flatMap((f) => {
      const m = /^exit\s+(\d+)\s*$/i.exec(f.text);
      return m ? [Number(m[1])] : [];
    }),
  };
}

function isAssignmentTarget(variable: Node): boolean {
  for (let p = variable.parent; p; p = p.parent) {
    if (p.type === "left_assignment_expression") return true;
    if (p.type === "assignment_expression" || p.type === "statement_list") return false;
  }
  return false;
}
