/**
 * Kubernetes label selectors as `kubectl --selector` and `kubectl drain --pod-selector` take them
 * (`app=web,tier!=db,env in (a,b),!legacy`): parsed by the rules of apimachinery's `labels.Parse`,
 * so a selector the API server would refuse is refused here first, and matched against a
 * labels map. Pure.
 */

/** One requirement of a selector. */
export interface LabelRequirement {
  readonly key: string;
  readonly operator: "exists" | "!exists" | "=" | "!=" | "in" | "notin" | ">" | "<";
  readonly values: readonly string[];
}

/** A parsed selector: every requirement must hold (an empty selector matches everything). */
export interface LabelSelector {
  readonly requirements: readonly LabelRequirement[];
}

const NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const SPECIAL = new Set(["!", "=", ">", "<", "(", ")", ","]);

function keyProblem(key: string): string | undefined {
  const slash = key.indexOf("/");
  const [prefix, name] = slash < 0 ? [undefined, key] : [key.slice(0, slash), key.slice(slash + 1)];
  if (prefix !== undefined && (prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix)))
    return `the key ${JSON.stringify(key)} has a prefix that is not a DNS subdomain`;
  if (name.length > 63 || !NAME.test(name))
    return `the key ${JSON.stringify(key)} is not a label name (at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit)`;
  return undefined;
}

function valueProblem(value: string): string | undefined {
  if (value === "" || (value.length <= 63 && NAME.test(value))) return undefined;
  return `the value ${JSON.stringify(value)} is not a label value (at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit)`;
}

/** Splits a selector into identifiers and operators, as apimachinery's lexer does. */
function tokens(text: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i] as string;
    if (/\s/.test(c)) {
      i++;
    } else if (SPECIAL.has(c)) {
      const two = text.slice(i, i + 2);
      const op = two === "==" || two === "!=" ? two : c;
      out.push(op);
      i += op.length;
    } else {
      let j = i;
      while (j < text.length && !SPECIAL.has(text[j] as string) && !/\s/.test(text[j] as string)) j++;
      out.push(text.slice(i, j));
      i = j;
    }
  }
  return out;
}

const isIdentifier = (t: string | undefined): boolean => t !== undefined && !SPECIAL.has(t) && t !== "==" && t !== "!=";

/** Parses a selector; throws an Error saying what is wrong. */
export function parseLabelSelector(text: string): LabelSelector {
  const t = tokens(text);
  const requirements: LabelRequirement[] = [];
  let i = 0;
  const fail = (why: string): never => {
    throw new Error(`${JSON.stringify(text)}: ${why}`);
  };
  const key = (): string => {
    const k = t[i];
    if (k === undefined) return fail("expected a label key at the end");
    if (!isIdentifier(k)) return fail(`expected a label key, found ${k}`);
    const problem = keyProblem(k);
    if (problem) fail(problem);
    i++;
    return k;
  };
  while (i < t.length) {
    if (t[i] === "!") {
      i++;
      requirements.push({ key: key(), operator: "!exists", values: [] });
    } else {
      const k = key();
      const op = t[i];
      if (op === undefined || op === ",") requirements.push({ key: k, operator: "exists", values: [] });
      else if (op === "=" || op === "==" || op === "!=") {
        i++;
        const v = isIdentifier(t[i]) ? (t[i++] as string) : "";
        const problem = valueProblem(v);
        if (problem) fail(problem);
        requirements.push({ key: k, operator: op === "!=" ? "!=" : "=", values: [v] });
      } else if (op === ">" || op === "<") {
        i++;
        const v = t[i++];
        if (v === undefined || !/^-?\d+$/.test(v)) fail(`${k} ${op} needs a whole number`);
        requirements.push({ key: k, operator: op, values: [v as string] });
      } else if (op === "in" || op === "notin") {
        i++;
        if (t[i++] !== "(") fail(`${k} ${op} needs a list in parentheses`);
        const values: string[] = [];
        for (;;) {
          const v = isIdentifier(t[i]) ? (t[i++] as string) : "";
          const problem = valueProblem(v);
          if (problem) fail(problem);
          values.push(v);
          const next = t[i++];
          if (next === ")") break;
          if (next !== ",") fail(`${k} ${op} (…): expected , or )`);
        }
        requirements.push({ key: k, operator: op, values });
      } else fail(`after ${k}: expected =, ==, !=, in, notin, >, < or a comma, found ${op}`);
    }
    if (i < t.length && t[i++] !== ",") fail(`expected a comma after requirement ${requirements.length}`);
    if (i === t.length && t[t.length - 1] === ",") fail("ends with a comma");
  }
  return { requirements };
}

/** Whether `labels` satisfy every requirement. */
export function matchesLabels(selector: LabelSelector, labels: Readonly<Record<string, string>>): boolean {
  return selector.requirements.every((r) => {
    const has = Object.hasOwn(labels, r.key);
    const v = labels[r.key];
    switch (r.operator) {
      case "exists":
        return has;
      case "!exists":
        return !has;
      case "=":
        return has && v === r.values[0];
      case "!=":
        return !has || v !== r.values[0];
      case "in":
        return has && r.values.includes(v as string);
      case "notin":
        return !has || !r.values.includes(v as string);
      case ">":
      case "<": {
        if (!has || !/^-?\d+$/.test(v as string)) return false;
        const a = Number(v);
        const b = Number(r.values[0]);
        return r.operator === ">" ? a > b : a < b;
      }
    }
  });
}
