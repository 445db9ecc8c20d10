/**
 * When a rollout through the DaemonSet controller is over, read as `kubectl rollout status` reads
 * it.
 */
import type { KubeClient } from "../cluster";
import { AgentError, AgentErrorCode } from "../common";

type DaemonSetList = {
  items: {
    metadata: { name: string; generation?: number };
    status?: {
      observedGeneration?: number;
      desiredNumberScheduled?: number;
      updatedNumberScheduled?: number;
      numberAvailable?: number;
    };
  }[];
};

/**
 * Resolves once every DaemonSet in `namespace` has rolled: its controller saw the last change and
 * each pod is updated and available, what `kubectl rollout status` waits for. A rollout is over
 * only then: a pod not yet available counts as unavailable, and the DaemonSet controller replaces
 * such a pod at once, beside the `maxUnavailable` it may take down, so the next version would move
 * two hosts together. Bounded by `timeoutMs`; a stop ends the wait early.
 * @throws naming the DaemonSets still rolling when the time is up.
 */
export async function daemonSetsSettled(
  api: KubeClient,
  namespace: string,
  signal: AbortSignal,
  timeoutMs = 120_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const list = await api.get<DaemonSetList>(`/apis/apps/v1/namespaces/${namespace}/daemonsets`);
    const rolling = list.items.filter(({ metadata: m, status: s = {} }) => {
      const desired = s.desiredNumberScheduled ?? 0;
      return (
        (m.generation ?? 0) > (s.observedGeneration ?? 0) ||
        (s.updatedNumberScheduled ?? 0) < desired ||
        (s.numberAvailable ?? 0) < desired
      );
    });
    if (rolling.length === 0 || signal.aborted) return;
    if (Date.now() > deadline)
      throw new AgentError(
        AgentErrorCode.Unavailable,
        `still rolling after ${timeoutMs / 1000} s: ${rolling
          .map(
            (d) =>
              `${d.metadata.name} (${d.status?.numberAvailable ?? 0} of ${d.status?.desiredNumberScheduled ?? 0} available)`,
          )
          .join(", ")}`,
      );
    await new Promise((r) => setTimeout(r, 1000));
  }
}
