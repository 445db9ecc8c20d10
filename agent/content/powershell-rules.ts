/**
 * The parse errors Windows PowerShell 5.1's own parser raises that the
 * tree-sitter grammar accepts (or rejects without saying why), each a rule
 * named by PowerShell's error id (ParserStrings). A script that fails one of
 * these would throw a ParseException before any of it ran — for a dot-sourced
 * module file, on every `Import-Module`. Rules read the tokens of
 * ./powershell-lexer and the tree-sitter tree; tree-sitter errors that no rule
 * explains are reported under the id PowerShell would give them where that is
 * clear, and as UnexpectedToken otherwise.
 */
import type Parser from "tree-sitter";
import { lexPowerShell, type PowerShellRuleError, type PsToken } from "./powershell-lexer";

export type { PowerShellRuleError } from "./powershell-lexer";

type Node = Parser.SyntaxNode;

/** Every error id a rule here reports. */
export const POWERSHELL_RULE_IDS = [
  "AmpersandNotAllowed",
  "DuplicateFormalParameter",
  "DuplicateKeyInHashLiteral",
  "EmptyPipeElement",
  "EmptyVariableReference",
  "ExpressionsMustBeFirstInPipeline",
  "IncompleteDollarVariableReference",
  "InvalidBracedVariableReference",
  "InvalidEndOfLine",
  "InvalidLeftHandSide",
  "InvalidVariableReference",
  "InvalidVariableReferenceWithDrive",
  "MissingArgument",
  "MissingCatchOrFinally",
  "MissingEndCurlyBrace",
  "MissingEndParenthesisInExpression",
  "MissingEndSquareBracket",
  "MissingExpressionAfterOperator",
  "MissingFileSpecification",
  "MissingTerminatorMultiLineComment",
  "ParameterRequiresArgument",
  "RedirectionNotSupported",
  "TerminatorExpectedAtEndOfString",
  "UnexpectedCharactersAfterHereStringHeader",
  "UnexpectedToken",
] as const;

const CLOSER: Readonly<Record<string, string>> = { "(": ")", "@(": ")", "$(": ")", "{": "}", "@{": "}", "[": "]" };
const MISSING_CLOSER: Readonly<Record<string, string>> = {
  ")": "MissingEndParenthesisInExpression",
  "}": "MissingEndCurlyBrace",
  "]": "MissingEndSquareBracket",
};
const ENDS_ELEMENT = new Set<PsToken["kind"]>(["newline", "semi", "pipe", "andand", "oror"]);
const OPERATORS =
  /^-(c|i)?(eq|ne|gt|ge|lt|le|like|notlike|match|notmatch|contains|notcontains|in|notin|replace|split|join|f|and|or|xor|not|band|bor|bxor|bnot|is|isnot|as|shl|shr)$/i;
const LEXICAL = new Set([
  "TerminatorExpectedAtEndOfString",
  "MissingTerminatorMultiLineComment",
  "IncompleteDollarVariableReference",
  "MissingEndCurlyBrace",
  "MissingEndParenthesisInExpression",
  "MissingEndSquareBracket",
  "UnexpectedToken",
]);
const OPERATOR_AT_END = /(^|\s)(-[a-z]+|[-+*/%]|[-+*/%]?=|\.\.)$/i;

function tokenRules(tokens: readonly PsToken[]): PowerShellRuleError[] {
  const out: PowerShellRuleError[] = [];
  const stack: PsToken[] = [];
  const at = (k: number): PsToken | undefined => tokens[k];
  // The next token, newlines skipped when `skipNewlines`.
  const following = (k: number, skipNewlines: boolean): PsToken | undefined => {
    let m = k + 1;
    while (skipNewlines && at(m)?.kind === "newline") m++;
    return at(m);
  };
  const previous = (k: number): PsToken | undefined => at(k - 1);
  for (let k = 0; k < tokens.length; k++) {
    const t = tokens[k] as PsToken;
    const prev = previous(k);
    const statementStart =
      prev === undefined ||
      prev.kind === "newline" ||
      prev.kind === "semi" ||
      (prev.kind === "open" && prev.text !== "[");
    switch (t.kind) {
      case "open":
        stack.push(t);
        break;
      case "close": {
        const open = stack.pop();
        if (open === undefined || CLOSER[open.text] !== t.text) {
          out.push({
            id: "UnexpectedToken",
            offset: t.offset,
            message: `unexpected token '${t.text}'${open ? ` where '${CLOSER[open.text] ?? "?"}' closes the '${open.text}' opened earlier` : ": nothing is open"}`,
          });
          if (open !== undefined && CLOSER[open.text] !== t.text) stack.push(open);
        }
        break;
      }
      case "andand":
      case "oror":
        out.push({
          id: "InvalidEndOfLine",
          offset: t.offset,
          message: `the token '${t.text}' is not a valid statement separator in Windows PowerShell 5.1 (use ; and if ($?))`,
        });
        break;
      case "pipe": {
        const next = following(k, true);
        if (
          statementStart ||
          next === undefined ||
          next.kind === "pipe" ||
          next.kind === "semi" ||
          (next.kind === "close" && next.text !== "]")
        ) {
          out.push({ id: "EmptyPipeElement", offset: t.offset, message: "an empty pipe element is not allowed" });
        } else if (
          next.kind === "string" ||
          next.kind === "variable" ||
          (next.kind === "word" && /^[0-9]/.test(next.text)) ||
          (next.kind === "open" && next.text !== "{" && next.text !== "[")
        ) {
          out.push({
            id: "ExpressionsMustBeFirstInPipeline",
            offset: next.offset,
            message: "expressions are only allowed as the first element of a pipeline",
          });
        }
        break;
      }
      case "amp": {
        const next = following(k, false);
        if (next === undefined || ENDS_ELEMENT.has(next.kind) || next.kind === "close") {
          out.push({
            id: "AmpersandNotAllowed",
            offset: t.offset,
            message:
              "the ampersand (&) is not allowed here in Windows PowerShell 5.1 (quote it, or use & only to call a command)",
          });
        }
        break;
      }
      case "input-redirect":
        out.push({
          id: "RedirectionNotSupported",
          offset: t.offset,
          message: "the '<' operator is reserved for future use",
        });
        break;
      case "redirect": {
        const merge = /^([*1-6]?)>>?&([1-6])$/.exec(t.text);
        if (merge) {
          if (merge[2] !== "1" || (merge[1] || "1") === "1")
            out.push({
              id: "RedirectionNotSupported",
              offset: t.offset,
              message: `the redirection '${t.text}' is not supported (only N>&1 merges)`,
            });
          break;
        }
        const next = following(k, false);
        if (next === undefined || ENDS_ELEMENT.has(next.kind) || next.kind === "close")
          out.push({
            id: "MissingFileSpecification",
            offset: t.offset,
            message: `missing file specification after redirection operator '${t.text}'`,
          });
        break;
      }
      case "comma": {
        if (prev?.kind === "parameter" && !prev.text.endsWith(":") && !OPERATORS.test(prev.text)) {
          out.push({
            id: "MissingArgument",
            offset: t.offset,
            message: `missing argument in parameter list: '${prev.text}' is followed by ','`,
          });
        }
        break;
      }
      case "parameter": {
        const next = following(k, false);
        if (t.text.endsWith(":") && (next === undefined || ENDS_ELEMENT.has(next.kind) || next.kind === "close")) {
          out.push({
            id: "ParameterRequiresArgument",
            offset: t.offset,
            message: `the parameter '${t.text}' ends with ':' but no argument follows`,
          });
        }
        break;
      }
      default:
        break;
    }
  }
  for (const open of stack) {
    const closer = CLOSER[open.text] ?? "";
    out.push({
      id: MISSING_CLOSER[closer] ?? "UnexpectedToken",
      offset: open.offset,
      message: `the '${open.text}' is missing its closing '${closer}'`,
    });
  }
  return out;
}

// The expression under the left side of an assignment, through tree-sitter's single-child chains.
function core(node: Node): Node {
  let n = node;
  while (
    n.namedChildCount === 1 &&
    /(_expression|^left_assignment_expression)$/.test(n.type) &&
    n.type !== "parenthesized_expression" &&
    n.type !== "array_literal_expression"
  )
    n = n.namedChildren[0] as Node;
  return n;
}

function assignable(node: Node, simple: boolean): Node | undefined {
  const n = core(node);
  switch (n.type) {
    case "variable":
    case "member_access":
    case "element_access":
      return undefined;
    case "array_literal_expression":
      if (n.namedChildCount === 1) return assignable(n.namedChildren[0] as Node, simple);
      if (!simple) return n;
      for (const e of n.namedChildren) {
        const bad = assignable(e, true);
        if (bad) return bad;
      }
      return undefined;
    case "parenthesized_expression": {
      const inner = n.namedChildren[0];
      const chain = inner?.type === "pipeline" ? inner.namedChildren : [];
      const only =
        chain.length === 1 &&
        chain[0]?.type === "pipeline_chain" &&
        chain[0].namedChildCount === 1 &&
        chain[0].namedChildren[0]?.type !== "command"
          ? chain[0].namedChildren[0]
          : undefined;
      return only ? assignable(only, simple) : n;
    }
    case "expression_with_unary_operator": {
      const cast = n.namedChildren.find((c) => c.type === "cast_expression");
      return cast && n.namedChildCount === 1 ? assignable(cast, simple) : n;
    }
    case "cast_expression": {
      const operand = n.namedChildren.find((c) => c.type !== "type_literal");
      return operand ? assignable(operand, simple) : n;
    }
    default:
      return n;
  }
}

function treeRules(root: Node): PowerShellRuleError[] {
  const out: PowerShellRuleError[] = [];
  for (const a of root.descendantsOfType("assignment_expression")) {
    const left = a.children.find((c) => c.type !== "assignement_operator" && c.type !== "comment");
    const operator = a.children.find((c) => c.type === "assignement_operator")?.text ?? "=";
    if (!left) continue;
    const bad = assignable(left, operator === "=");
    if (bad)
      out.push({
        id: "InvalidLeftHandSide",
        offset: bad.startIndex,
        message: `the assignment expression is not valid: '${bad.text.slice(0, 40)}' cannot be assigned to (the left side must be a variable or a property)`,
      });
  }
  for (const h of root.descendantsOfType("hash_literal_body")) {
    const seen = new Set<string>();
    for (const entry of h.namedChildren.filter((c) => c.type === "hash_entry")) {
      const key = entry.namedChildren[0];
      const constant = key ? constantKey(key) : undefined;
      if (constant === undefined) continue;
      if (seen.has(constant.toLowerCase()))
        out.push({
          id: "DuplicateKeyInHashLiteral",
          offset: (key as Node).startIndex,
          message: `duplicate keys '${constant}' are not allowed in hash literals`,
        });
      seen.add(constant.toLowerCase());
    }
  }
  const parameterLists = [
    ...root.descendantsOfType("function_parameter_declaration"),
    ...root.descendantsOfType("param_block"),
  ];
  for (const list of parameterLists) {
    const seen = new Set<string>();
    for (const p of list.descendantsOfType("script_parameter")) {
      if (p.parent && p.parent.type !== "parameter_list") continue;
      const name = p.namedChildren
        .find((c) => c.type === "variable")
        ?.text.replace(/^\$\{?|\}$/g, "")
        .toLowerCase();
      if (name === undefined) continue;
      if (seen.has(name))
        out.push({
          id: "DuplicateFormalParameter",
          offset: p.startIndex,
          message: `duplicate parameter $${name} in the parameter list`,
        });
      seen.add(name);
    }
  }
  for (const t of root.descendantsOfType("try_statement")) {
    if (
      !t.namedChildren.some(
        (c) => c.type === "catch_clauses" || c.type === "catch_clause" || c.type === "finally_clause",
      )
    ) {
      out.push({
        id: "MissingCatchOrFinally",
        offset: t.startIndex,
        message: "the try statement is missing its catch or finally block",
      });
    }
  }
  return out;
}

function constantKey(key: Node): string | undefined {
  const n = core(key);
  if (n.type === "key_expression" || n.type === "simple_name") return n.text;
  if (
    n.type === "string_literal" ||
    n.type === "verbatim_string_characters" ||
    n.type === "expandable_string_literal"
  ) {
    const t = n.text;
    if (t.startsWith("'")) return t.slice(1, -1).replace(/''/g, "'");
    if (t.startsWith('"') && !/[$`]/.test(t)) return t.slice(1, -1);
    return undefined;
  }
  if (n.type === "integer_literal" || n.type === "decimal_integer_literal") return String(Number(n.text));
  return undefined;
}

// What PowerShell would call a tree-sitter error that no rule explained.
function classify(node: Node, source: string): string {
  if (node.isMissing) {
    if (node.type === "}") return "MissingEndCurlyBrace";
    if (node.type === ")") return "MissingEndParenthesisInExpression";
    if (node.type === "]") return "MissingEndSquareBracket";
    if (node.type.startsWith("command_name")) return "EmptyPipeElement";
    return "UnexpectedToken";
  }
  const text = source.slice(node.startIndex, node.endIndex).trim();
  if (OPERATOR_AT_END.test(text)) return "MissingExpressionAfterOperator";
  return "UnexpectedToken";
}

/** The PowerShell parse errors of `source` (parsed by tree-sitter as `root`), by PowerShell's error ids. */
export function powerShellRuleErrors(source: string, root: Node): PowerShellRuleError[] {
  const { tokens, errors } = lexPowerShell(source);
  const found = [...errors, ...tokenRules(tokens), ...treeRules(root)];
  // tree-sitter's own errors, where no rule already placed one on that line.
  const lineOf = (offset: number): number => source.slice(0, offset).split("\n").length;
  const lines = new Set(found.map((e) => lineOf(e.offset)));
  // After an unclosed string, comment or bracket, tree-sitter's errors are that one's echoes.
  const cascading = found.some((e) => LEXICAL.has(e.id));
  const walk = (node: Node): void => {
    if (!node.hasError && !node.isMissing) return;
    if (node.isMissing || node.type === "ERROR") {
      const lastLine = lineOf(node.endIndex);
      const firstLine = lineOf(node.startIndex);
      let covered = false;
      for (let l = firstLine; l <= lastLine && !covered; l++) covered = lines.has(l);
      if (!covered && !cascading) {
        const id = classify(node, source);
        found.push({
          id,
          offset: node.startIndex,
          message: node.isMissing
            ? `missing '${node.type}'`
            : `cannot parse "${source.slice(node.startIndex, Math.min(node.endIndex, node.startIndex + 60)).replace(/\s+/g, " ")}"`,
        });
      }
      if (node.type === "ERROR") return;
    }
    for (const child of node.children) walk(child);
  };
  walk(root);
  return found.sort((a, b) => a.offset - b.offset);
}
