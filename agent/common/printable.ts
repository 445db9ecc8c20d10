/**
 * Text from elsewhere (a node's pod log, a container's status message) made safe
 * to print on an operator's terminal: control characters, which a terminal
 * would act on (an OSC 52 clipboard write, a screen clear, a cursor move that
 * paints a fake line), and the Unicode controls that reorder what is shown are
 * written as visible escapes instead, and the whole is bounded.
 */

// C0 controls but tab, DEL, C1 controls, and the bidirectional embedding, override and isolate marks.
// eslint-disable-next-line no-control-regex -- control characters are what is looked for
const UNSAFE = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** `text` with every unsafe character shown as `\uXXXX`, cut at `max` characters (marked `…`). */
export function printable(text: string, max = 2000): string {
  const cut = text.length > max ? `${text.slice(0, max)}…` : text;
  return cut.replace(UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
