/** A small seeded PRNG (mulberry32), so generated corpora are the same on every run. */
export class Rng {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  /** A float in [0, 1). */
  next(): number {
    let t = (this.state = (this.state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error("pick from an empty list");
    return items[this.int(items.length)] as T;
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  bytes(n: number, text: boolean): Buffer {
    const alphabet = "abcdefghijklmnopqrstuvwxyz ABC\n\t0123456789-_.~%/:;,=+é€\"'\\";
    if (text) return Buffer.from(Array.from({ length: n }, () => this.pick([...alphabet])).join(""), "utf8");
    return Buffer.from(Array.from({ length: n }, () => this.int(256)));
  }
}
