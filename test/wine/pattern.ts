/** The byte at offset `i` of a host program's `output` stream: a pattern a lost, doubled or reordered chunk breaks. */
export function patternByte(i: number): number {
  return (i * 7 + Math.floor(i / 65_536)) & 0xff;
}
