/**
 * A collection followed as a kubelet follows its pods: listed, then watched from the list's version; a watch the
 * server ends is resumed, and one that fails (the API server away, the version compacted) is listed again after a
 * pause that grows while it keeps failing.
 */
import type { KubeClient } from "./kube-client";

/** What {@link listAndWatch} hands over, and how it paces itself. */
export interface ListAndWatchOptions<T> {
  /** Every full list, in place of all that came before it. */
  readonly onList: (items: readonly T[]) => Promise<void>;
  /** Each change after a list, in the API server's order. */
  readonly onEvent: (type: "ADDED" | "MODIFIED" | "DELETED", object: T) => void;
  readonly signal: AbortSignal;
  /** The first pause after a failure; it doubles up to 10 s. @default 1000 */
  readonly retryMs?: number;
  /** One line when it starts failing, one when it lists again: not one per retry. */
  readonly log?: (line: string) => void;
}

/** Follows `path` until `signal` aborts. */
export async function listAndWatch<T>(api: KubeClient, path: string, options: ListAndWatchOptions<T>): Promise<void> {
  const { signal } = options;
  const first = options.retryMs ?? 1000;
  let pause = first;
  let failing = false;
  while (!signal.aborted) {
    try {
      const list = await api.get<{ metadata: { resourceVersion: string }; items: T[] }>(path);
      await options.onList(list.items);
      let version = list.metadata.resourceVersion;
      if (failing) options.log?.("listing again");
      failing = false;
      pause = first;
      while (!signal.aborted) version = await api.watchOnce<T>(path, version, options.onEvent, signal);
    } catch (e) {
      if (signal.aborted) break;
      if (!failing) options.log?.(`listing or watching failed (retrying): ${String(e)}`);
      failing = true;
      await pauseFor(pause, signal);
      pause = Math.min(pause * 2, 10_000);
    }
  }
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function pauseFor(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}
