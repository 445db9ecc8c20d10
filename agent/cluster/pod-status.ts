/**
 * A pod's status as the kubelet writes it, from what the node stand-in knows of the pod: its
 * phase, conditions, and each container's state.
 */
import type { Container, Running } from "./pod-model";

/** Whether the pod ends once its containers do (restartPolicy Never or OnFailure). */
export function endsItself(r: Running): boolean {
  return r.pod.spec.restartPolicy === "Never" || r.pod.spec.restartPolicy === "OnFailure";
}

/**
 * The status of `r` at time `t`. A condition's lastTransitionTime moves only when its status does
 * (kept in `r.transitions`): the DaemonSet controller counts a pod available minReadySeconds after
 * it turned Ready.
 */
export function podStatus(r: Running, t: string): Record<string, unknown> {
  const cond = (type: string, ok: boolean, reason?: string) => {
    const status = ok ? "True" : "False";
    const last = r.transitions?.get(type);
    const at = last?.status === status ? last.at : t;
    r.transitions?.set(type, { status, at });
    return { type, status, lastTransitionTime: at, ...(reason && !ok ? { reason } : {}) };
  };
  const state = (c: Container) => {
    const ended = r.exited.get(c.name);
    if (ended)
      return {
        terminated: {
          exitCode: ended.code,
          reason: ended.code === 0 ? "Completed" : "Error",
          startedAt: r.startedAt,
          finishedAt: ended.at,
        },
      };
    if (r.failed && r.initialized)
      return { terminated: { exitCode: 137, reason: r.failed.reason, startedAt: r.startedAt, finishedAt: t } };
    return r.initialized ? { running: { startedAt: r.startedAt } } : { waiting: { reason: "PodInitializing" } };
  };
  const containerStatus = (c: Container) => ({
    name: c.name,
    image: c.image ?? "",
    imageID: "",
    ready: r.initialized && r.ready && !r.exited.has(c.name),
    restartCount: 0,
    started: r.initialized && !r.exited.has(c.name),
    state: state(c),
  });
  const allExited = r.exited.size === r.pod.spec.containers.length;
  const phase = r.failed
    ? "Failed"
    : allExited
      ? [...r.exited.values()].every((e) => e.code === 0)
        ? "Succeeded"
        : "Failed"
      : r.initialized
        ? "Running"
        : "Pending";
  const podReady = r.initialized && r.ready && !allExited && !r.failed;
  return {
    phase,
    ...(r.failed ? { reason: r.failed.reason, message: r.failed.message } : {}),
    hostIP: "127.0.0.1",
    podIP: "127.0.0.1",
    startTime: r.startedAt,
    conditions: [
      cond("PodScheduled", true),
      cond("Initialized", r.initialized, "ContainersNotInitialized"),
      cond("ContainersReady", podReady, "ContainersNotReady"),
      cond("Ready", podReady, "ContainersNotReady"),
    ],
    initContainerStatuses: (r.pod.spec.initContainers ?? []).map((c) => ({
      name: c.name,
      image: c.image ?? "",
      imageID: "",
      ready: r.initialized,
      restartCount: 0,
      state: r.initialized
        ? { terminated: { exitCode: 0, reason: "Completed" } }
        : r.initError
          ? endsItself(r)
            ? { terminated: { exitCode: 1, reason: "Error", message: r.initError } }
            : { waiting: { reason: "CrashLoopBackOff", message: r.initError } }
          : { running: { startedAt: r.startedAt } },
    })),
    containerStatuses: r.pod.spec.containers.map(containerStatus),
  };
}
