/**
 * The content this repository ships, analysed once per test file (in a
 * `before` hook), with lookups that fail naming what is missing.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { before } from "node:test";
import { type AnalyzedComponent, type AnalyzedContent, analyzeContent } from "../../agent/content/analysis";

/** The repository's content/ directory. */
export const CONTENT = join(__dirname, "..", "..", "content");

/** The analysed shipped content (read after the file's `before` hooks have run), and lookups into it. */
export interface ShippedContent {
  readonly content: AnalyzedContent;
  /** The component of that name (its first version). */
  readonly component: (name: string) => AnalyzedComponent;
  /** A component's script whose host path ends in `\<leaf>` (case-insensitive). */
  readonly script: (c: AnalyzedComponent, leaf: string) => AnalyzedComponent["scripts"][number];
}

/** Analyses the shipped content before the file's tests. */
export function shippedContent(): ShippedContent {
  let analyzed: AnalyzedContent | undefined;
  before(async () => {
    analyzed = await analyzeContent(CONTENT);
  });
  const shipped: ShippedContent = {
    get content(): AnalyzedContent {
      assert.ok(analyzed, "the content is analysed in a before hook; read it from a test");
      return analyzed;
    },
    component: (name) => {
      const c = shipped.content.components.find((x) => x.metadata.name === name);
      assert.ok(c, `no component ${name}`);
      return c;
    },
    script: (c, leaf) => {
      const s = c.scripts.find((x) => x.hostPath.toLowerCase().endsWith(`\\${leaf.toLowerCase()}`));
      assert.ok(s, `${c.key} has no ${leaf}`);
      return s;
    },
  };
  return shipped;
}
