/**
 * Reading a `fetch` response body without trusting the server: at most
 * `limit` bytes are kept, and a body that goes over (by its Content-Length or
 * by what arrives) is cancelled, not read to its end.
 */

/** A body was larger than the reader allows. */
export class BodyTooLargeError extends Error {
  constructor(
    readonly limit: number,
    readonly declared?: number,
  ) {
    super(
      declared !== undefined
        ? `the answer declares ${declared} bytes, over the ${limit}-byte limit`
        : `the answer is over the ${limit}-byte limit`,
    );
    this.name = "BodyTooLargeError";
  }
}

/** Reads `response`'s body into a Buffer of at most `limit` bytes; throws BodyTooLargeError past it. */
export async function readBodyLimited(response: Response, limit: number): Promise<Buffer> {
  const declared = Number(response.headers.get("content-length") ?? "0");
  if (declared > limit) {
    await response.body?.cancel().catch(() => undefined);
    throw new BodyTooLargeError(limit, declared);
  }
  if (!response.body) return Buffer.alloc(0);
  const chunks: Uint8Array[] = [];
  let size = 0;
  // Node's web streams are async iterable (the DOM typings do not say so); leaving the loop cancels the stream.
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > limit) throw new BodyTooLargeError(limit);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}
