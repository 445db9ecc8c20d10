/**
 * A PowerShell tokenizer small enough to keep in step with PowerShell's own
 * (System.Management.Automation.Language.Tokenizer): it knows where strings,
 * here-strings, comments, variables, brackets and the statement-level
 * operators are, which is what the parse rules of ./powershell-rules need and
 * what tree-sitter's grammar is too lenient about. It reports the errors
 * PowerShell's tokenizer itself raises, under PowerShell's error ids.
 */

/** One error, under the id PowerShell's parser reports (ParserStrings). */
export interface PowerShellRuleError {
  readonly id: string;
  /** 0-based offset into the source. */
  readonly offset: number;
  readonly message: string;
}

/** A token of code (strings, comments and variables are consumed, not returned). */
export interface PsToken {
  readonly kind:
    | "open"
    | "close"
    | "pipe"
    | "andand"
    | "oror"
    | "amp"
    | "semi"
    | "newline"
    | "comma"
    | "redirect"
    | "input-redirect"
    | "string"
    | "variable"
    | "word"
    | "parameter";
  readonly text: string;
  readonly offset: number;
  /** Whether this token is inside `$(…)` of an expandable string. */
  readonly nested: boolean;
}

const SCOPES = new Set(["global", "local", "private", "script", "using", "workflow"]);
const NAME_CHAR = /[\p{L}\p{Nd}_?]/u;
// Characters that end a token in command mode (CharTraits.ForceStartNewToken), plus the three
// the variable scanner always stops at.
const ALWAYS_ENDS_VARIABLE = /^[\s\0&(),;{}|.[=]?$/;
const DASHES = /[-\u2013\u2014\u2015]/;

/** Tokens of code and the tokenizer's own errors. */
export interface Lexed {
  readonly tokens: readonly PsToken[];
  readonly errors: readonly PowerShellRuleError[];
}

/** Tokenizes `source` as PowerShell does, enough for the rules in ./powershell-rules. */
export function lexPowerShell(source: string): Lexed {
  const tokens: PsToken[] = [];
  const errors: PowerShellRuleError[] = [];
  const err = (id: string, offset: number, message: string): void => {
    errors.push({ id, offset, message });
  };
  const n = source.length;

  // `$…` at `start` (source[start] === '$'); returns the index after it.
  function variable(start: number, inString: boolean): number {
    let j = start + 1;
    const c = source[j];
    if (c === "{") {
      j++;
      let name = "";
      while (j < n && source[j] !== "}") {
        if (source[j] === "`" && j + 1 < n) j++;
        name += source[j];
        j++;
      }
      if (j >= n) {
        err("IncompleteDollarVariableReference", start, "the ${…} variable reference is not closed with '}'");
        return n;
      }
      if (name === "")
        err("EmptyVariableReference", start, "empty ${} variable reference; a variable name is required");
      else if (/:$/.test(name))
        err("InvalidBracedVariableReference", start, `\${${name}}: ':' is not followed by a variable name`);
      return j + 1;
    }
    if (c === "$" || c === "^") return j + 1;
    let name = "";
    while (j < n) {
      const ch = source[j] as string;
      if (NAME_CHAR.test(ch)) {
        name += ch;
        j++;
      } else if (ch === ":" && source[j + 1] !== ":") {
        name += ch;
        j++;
      } else break;
    }
    if (name === "" || !name.includes(":")) return j;
    const [qualifier = "", ...rest] = name.split(":");
    if (rest.join(":") !== "") return j;
    const next = source[j] ?? "";
    // In command mode PowerShell rescans `$x:"…` as a generic token; in a string and after these it cannot.
    if (!inString && !ALWAYS_ENDS_VARIABLE.test(next)) return j;
    if (qualifier === "") return j;
    const scope = SCOPES.has(qualifier.toLowerCase());
    err(
      scope ? "InvalidVariableReference" : "InvalidVariableReferenceWithDrive",
      start,
      `variable reference $${name} is not valid: ':' is not followed by a variable name character (write \${${name.slice(0, -1)}}${scope ? "" : ":"} to end the name before the colon)`,
    );
    return j;
  }

  // The body of an expandable string from `start` (after the opening quote) to its end; returns the index after it.
  function expandable(start: number, here: boolean, quoteAt: number): number {
    let j = start;
    while (j < n) {
      const ch = source[j];
      if (ch === "`") {
        j += 2;
        continue;
      }
      if (here) {
        if ((ch === "\n" || ch === "\r") && /^\r?\n"@/.test(source.slice(j, j + 4)))
          return j + (source[j] === "\r" ? 4 : 3);
      } else if (ch === '"') {
        if (source[j + 1] === '"') {
          j += 2;
          continue;
        }
        return j + 1;
      }
      if (ch === "$") {
        if (source[j + 1] === "(") {
          j = code(j + 2, ")", true);
          continue;
        }
        j = variable(j, true);
        continue;
      }
      j++;
    }
    err(
      "TerminatorExpectedAtEndOfString",
      quoteAt,
      here
        ? 'the here-string is missing its terminator "@ at the start of a line'
        : 'the string is missing the terminator "',
    );
    return n;
  }

  function verbatim(start: number, here: boolean, quoteAt: number): number {
    let j = start;
    while (j < n) {
      const ch = source[j];
      if (here) {
        if ((ch === "\n" || ch === "\r") && /^\r?\n'@/.test(source.slice(j, j + 4)))
          return j + (source[j] === "\r" ? 4 : 3);
      } else if (ch === "'") {
        if (source[j + 1] === "'") {
          j += 2;
          continue;
        }
        return j + 1;
      }
      j++;
    }
    err(
      "TerminatorExpectedAtEndOfString",
      quoteAt,
      here
        ? "the here-string is missing its terminator '@ at the start of a line"
        : "the string is missing the terminator '",
    );
    return n;
  }

  // Code from `start` until the `until` closer at depth 0 (or the end); returns the index after it.
  function code(start: number, until: ")" | undefined, nested: boolean): number {
    let j = start;
    let depth = 0;
    const push = (kind: PsToken["kind"], text: string, offset: number): void => {
      tokens.push({ kind, text, offset, nested });
    };
    const atTokenStart = (k: number): boolean => k === 0 || /[\s;(){}|&,=]/.test(source[k - 1] ?? "");
    while (j < n) {
      const ch = source[j] as string;
      const two = source.slice(j, j + 2);
      if (ch === "`") {
        j += 2;
        continue;
      }
      if (ch === "\n") {
        push("newline", ch, j);
        j++;
        continue;
      }
      if (/\s/.test(ch)) {
        j++;
        continue;
      }
      if (two === "<#") {
        const end = source.indexOf("#>", j + 2);
        if (end < 0) {
          err("MissingTerminatorMultiLineComment", j, "the block comment <# is missing its terminator #>");
          return n;
        }
        j = end + 2;
        continue;
      }
      if (ch === "#" && atTokenStart(j)) {
        while (j < n && source[j] !== "\n") j++;
        continue;
      }
      if (two === "@'" || two === '@"') {
        const header = /^@(['"])[ \t]*(\r?\n)/.exec(source.slice(j));
        if (header) {
          push("string", two, j);
          j =
            two === "@'" ? verbatim(j + header[0].length - 1, true, j) : expandable(j + header[0].length - 1, true, j);
          continue;
        }
        if (/^@(['"])[ \t]*\S/.test(source.slice(j)))
          err(
            "UnexpectedCharactersAfterHereStringHeader",
            j,
            "nothing may follow a here-string's opening @' or @\" on its line",
          );
      }
      if (ch === "'" || "\u2018\u2019\u201a\u201b".includes(ch)) {
        push("string", ch, j);
        j = verbatim(j + 1, false, j);
        continue;
      }
      if (ch === '"' || "\u201c\u201d\u201e".includes(ch)) {
        push("string", ch, j);
        j = expandable(j + 1, false, j);
        continue;
      }
      if (ch === "$") {
        if (source[j + 1] === "(") {
          push("open", "$(", j);
          depth++;
          j += 2;
          continue;
        }
        push("variable", "$", j);
        j = variable(j, false);
        continue;
      }
      if ((ch === "@" && (source[j + 1] === "(" || source[j + 1] === "{")) || ch === "(" || ch === "{" || ch === "[") {
        const text = ch === "@" ? two : ch;
        push("open", text, j);
        depth++;
        j += text.length;
        continue;
      }
      if (ch === ")" || ch === "}" || ch === "]") {
        if (until !== undefined && ch === until && depth === 0) return j + 1;
        push("close", ch, j);
        depth--;
        j++;
        continue;
      }
      if (two === "&&" || two === "||") {
        push(two === "&&" ? "andand" : "oror", two, j);
        j += 2;
        continue;
      }
      if (ch === "|") {
        push("pipe", ch, j);
        j++;
        continue;
      }
      if (ch === "&") {
        push("amp", ch, j);
        j++;
        continue;
      }
      if (ch === ";") {
        push("semi", ch, j);
        j++;
        continue;
      }
      if (ch === ",") {
        push("comma", ch, j);
        j++;
        continue;
      }
      const redirect = /^(?:[*1-6]?>>?(?:&[1-6])?|<)/.exec(source.slice(j));
      if (redirect && atTokenStart(j)) {
        push(redirect[0] === "<" ? "input-redirect" : "redirect", redirect[0], j);
        j += redirect[0].length;
        continue;
      }
      // A word: a command name, bare argument, number, operator or member name.
      let k = j;
      while (k < n && !/[\s;(){}|&,"'`$[\]]/.test(source[k] as string)) k++;
      if (k === j) k++;
      const text = source.slice(j, k);
      push(DASHES.test(text[0] ?? "") && /^.[\p{L}_?]/u.test(text) ? "parameter" : "word", text, j);
      j = k;
    }
    return n;
  }

  code(0, undefined, false);
  return { tokens, errors };
}
