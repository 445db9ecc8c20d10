/**
 * Version order for templates and components: the content reference lists
 * versions in it and the agent takes "the newest" by it, so both agree.
 */

/** Compares versions segment by segment, numbers numerically (`v1.10` > `v1.9`); a leading `v` is ignored. */
export function compareVersions(a: string, b: string): number {
  const parts = (v: string): string[] => v.replace(/^v/i, "").split(/[.\-+_]/);
  const pa = parts(a);
  const pb = parts(b);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const x = pa[i];
    const y = pb[i];
    if (x === undefined) return -1;
    if (y === undefined) return 1;
    const nx = /^\d+$/.test(x) ? Number(x) : NaN;
    const ny = /^\d+$/.test(y) ? Number(y) : NaN;
    const c = !Number.isNaN(nx) && !Number.isNaN(ny) ? nx - ny : x < y ? -1 : x > y ? 1 : 0;
    if (c !== 0) return c;
  }
  return 0;
}
