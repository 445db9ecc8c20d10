/**
 * The pod runner's two conversations with the API server that outlast a single request: reading a pod's ConfigMap
 * volumes into its directory, and removing a pod whose containers have ended.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { KubeClient } from "./kube-client";
import { pauseFor } from "./list-and-watch";
import type { Pod } from "./pod-model";

/** Writes each ConfigMap volume of `pod` under `dir/<volume>/<key>`, as a kubelet mounts one. */
export async function mountConfigMaps(api: KubeClient, pod: Pod, dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  for (const v of pod.spec.volumes ?? []) {
    if (!v.configMap) continue;
    const cm = await api.get<{ data?: Record<string, string>; binaryData?: Record<string, string> }>(
      `/api/v1/namespaces/${pod.metadata.namespace}/configmaps/${v.configMap.name}`,
    );
    await mkdir(join(dir, v.name), { recursive: true });
    for (const [k, text] of Object.entries(cm.data ?? {})) await writeFile(join(dir, v.name, k), text);
    for (const [k, b64] of Object.entries(cm.binaryData ?? {}))
      await writeFile(join(dir, v.name, k), Buffer.from(b64, "base64"));
  }
}

/**
 * Deletes `pod` (grace 0, its uid as precondition) until the API server takes it or `signal` aborts, pausing from
 * `retryMs` up to 10 s between tries. The caller aborts once it sees the pod gone: no answer to the delete says so,
 * as a restarted API server's NodeRestriction answers a node's delete with 404 until its cache holds the pod again.
 */
export async function deletePodUntilGone(
  api: KubeClient,
  pod: Pod,
  signal: AbortSignal,
  options: { readonly retryMs?: number; readonly log?: (line: string) => void },
): Promise<void> {
  const path = `/api/v1/namespaces/${pod.metadata.namespace}/pods/${pod.metadata.name}`;
  let pause = options.retryMs ?? 1000;
  let said: string | undefined;
  while (!signal.aborted) {
    try {
      await api.call("DELETE", path, { gracePeriodSeconds: 0, preconditions: { uid: pod.metadata.uid } });
      if (said !== undefined) options.log?.("removed");
      return;
    } catch (e) {
      const text = String(e);
      if (text !== said && !signal.aborted) options.log?.(`not removed yet (retrying): ${text}`);
      said = text;
    }
    await pauseFor(pause, signal);
    pause = Math.min(pause * 2, 10_000);
  }
}
