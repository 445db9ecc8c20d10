/**
 * `winfleet diagnose NODE`: a node's diagnostics archive fetched through the cluster, from the
 * operator's seat. A short-lived pod is bound to the node (`spec.nodeName`) as a HostProcess pod
 * with the image and agent the node's winfleet upgrader uses; it runs
 * `winfleet-agent diagnose --out -`, which prints the archive framed for a container log; the
 * archive is read back through the API server's `pods/log` — the kubelet-proxied path every
 * cluster has, with no exec or SPDY — checked against the size and SHA-256 the agent announced,
 * and written atomically. The pod is deleted whatever happens, Ctrl-C included.
 */
import { randomBytes } from "node:crypto";
import { HOST_AGENT, HOST_NODE, INSTALL } from "../../components";
import { KubeError } from "../cluster";
import { AgentError, AgentErrorCode, errorMessage, printable, writeFileAtomic } from "../common";
import { FrameError, FrameReader } from "../diagnose";
import type { OperatorApi } from "./operator-api";
import { STACK_LABEL } from "../../components";

/** What to fetch, from where, and how long it may take. */
export interface DiagnoseNodeOptions {
  readonly api: OperatorApi;
  readonly node: string;
  /**
   * Where winfleet's upgraders run, and where the pod is made. @default the node's stack's: `winfleet-<stack>` by its
   * `winfleet.io/stack` label (a stack's default namespace), else `winfleet-system`
   */
  readonly namespace?: string | undefined;
  /** Passed to the agent's `--since` (already checked). */
  readonly since?: string;
  /** The most the whole fetch may take; also the pod's activeDeadlineSeconds. */
  readonly timeoutMs: number;
  readonly out: string;
  /** Aborted on Ctrl-C: the pod is deleted and the fetch fails. */
  readonly signal: AbortSignal;
  /** Progress lines, for a person watching. */
  readonly progress?: (line: string) => void;
}

/** What was fetched. */
export interface DiagnoseNodeResult {
  readonly out: string;
  readonly bytes: number;
  readonly sha256: string;
  readonly pod: string;
}

type Labels = Record<string, string>;
type Node = {
  metadata: { name: string; labels?: Labels };
  status?: {
    conditions?: { type: string; status: string; reason?: string; message?: string; lastTransitionTime?: string }[];
  };
};
type Container = { name: string; image?: string; command?: string[] };
type PodSpec = {
  nodeSelector?: Labels;
  securityContext?: { windowsOptions?: { hostProcess?: boolean } };
  initContainers?: Container[];
  containers?: Container[];
};
type DaemonSet = { metadata: { name: string }; spec: { template: { spec: PodSpec } } };
type ContainerState = {
  waiting?: { reason?: string; message?: string };
  terminated?: { exitCode: number; reason?: string; message?: string };
};
type Pod = {
  metadata: { name: string };
  status?: {
    phase?: string;
    reason?: string;
    message?: string;
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
    containerStatuses?: { state?: ContainerState }[];
  };
};

const CONTAINER = "diagnose";
/** Waiting reasons after which the pod will not start by itself. */
const STUCK = new Set([
  "ErrImagePull",
  "ImagePullBackOff",
  "InvalidImageName",
  "CreateContainerConfigError",
  "CreateContainerError",
  "RunContainerError",
]);
const enc = encodeURIComponent;

const failure = (message: string, code: AgentErrorCode = AgentErrorCode.Unavailable): AgentError =>
  new AgentError(code, message);

/** The API's refusal, with what the operator's credential needs when it is a 403. */
function refused(e: unknown, what: string): never {
  if (e instanceof KubeError && e.status === 403) {
    throw failure(
      `${what}: forbidden — the kubeconfig's identity needs: get nodes; list daemonsets.apps, create/get/delete pods and get pods/log in the namespace (see docs/troubleshooting.md): ${e.message}`,
      AgentErrorCode.PermissionDenied,
    );
  }
  throw e instanceof AgentError ? e : failure(`${what}: ${errorMessage(e)}`);
}

/** The node, Ready; a clear error when it is unknown or NotReady. */
async function readyNode(api: OperatorApi, name: string): Promise<Node> {
  let node: Node;
  try {
    node = await api.json<Node>("GET", `/api/v1/nodes/${enc(name)}`);
  } catch (e) {
    if (e instanceof KubeError && e.status === 404) {
      const names = await api.json<{ items: Node[] }>("GET", "/api/v1/nodes").then(
        (l) =>
          l.items
            .map((n) => n.metadata.name)
            .sort()
            .join(", "),
        () => undefined,
      );
      throw failure(
        `node ${name} not found in the cluster at ${api.server}${names !== undefined ? ` (nodes: ${names || "none"})` : ""}`,
        AgentErrorCode.NotFound,
      );
    }
    refused(e, `reading node ${name}`);
  }
  const ready = node.status?.conditions?.find((c) => c.type === "Ready");
  if (ready?.status !== "True") {
    const why = ready
      ? `Ready is ${ready.status}${ready.reason ? ` (${ready.reason}${ready.message ? `: ${ready.message}` : ""})` : ""}${ready.lastTransitionTime ? ` since ${ready.lastTransitionTime}` : ""}`
      : "it has no Ready condition";
    throw failure(
      `node ${name} is NotReady: ${printable(why)}. Its kubelet cannot run the diagnose pod; on the node itself, run winfleet-agent diagnose (docs/troubleshooting.md)`,
    );
  }
  return node;
}

/** The node's agent upgrader: the image and the way its pods reach the host's agent. */
async function upgraderFor(
  api: OperatorApi,
  namespace: string,
  node: Node,
): Promise<{ daemonSet: string; image: string; sandbox: boolean }> {
  const selector = enc("app.kubernetes.io/name=winfleet-upgrader,app.kubernetes.io/component=agent");
  const list = await api
    .json<{ items: DaemonSet[] }>(
      "GET",
      `/apis/apps/v1/namespaces/${enc(namespace)}/daemonsets?labelSelector=${selector}`,
    )
    .catch((e: unknown) => refused(e, `listing the upgraders in ${namespace}`));
  const labels = node.metadata.labels ?? {};
  const mine = list.items.find((d) =>
    Object.entries(d.spec.template.spec.nodeSelector ?? {}).every(([k, v]) => labels[k] === v),
  );
  if (!mine) {
    throw failure(
      `no winfleet agent upgrader in namespace ${namespace} selects node ${node.metadata.name} (upgraders there: ${list.items.map((d) => d.metadata.name).join(", ") || "none"}): the node is in no winfleet pool, or winfleet runs in another namespace (--namespace)`,
      AgentErrorCode.NotFound,
    );
  }
  const spec = mine.spec.template.spec;
  const init = spec.initContainers?.[0];
  const image = init?.image ?? spec.containers?.[0]?.image;
  if (!image) throw failure(`upgrader ${mine.metadata.name} names no image`);
  // The local fleet's upgraders call the host's agent by name; a Windows pool's by its install path.
  const sandbox = init?.command?.[0] === "winfleet-agent";
  if (!sandbox && spec.securityContext?.windowsOptions?.hostProcess !== true) {
    throw failure(
      `node ${node.metadata.name} is in a pool whose upgrader (${mine.metadata.name}) runs in wins mode, without HostProcess containers: the diagnose pod cannot reach the host there; on the node itself, run winfleet-agent diagnose`,
    );
  }
  return { daemonSet: mine.metadata.name, image, sandbox };
}

/** The pod: bound to the node, as SYSTEM on the host, ending by itself, seeing nothing of the API. */
export function diagnosePod(o: {
  node: string;
  namespace: string;
  image: string;
  sandbox: boolean;
  since?: string;
  timeoutMs: number;
}): Record<string, unknown> {
  const deadline = Math.max(30, Math.ceil(o.timeoutMs / 1000));
  // Each source gets a share of the time, so the agent finishes, with what it has, before the deadline:
  // some 26 sources on Windows, four at a time, are seven rounds at most.
  const perSource = `${Math.max(3, Math.min(30, Math.floor(deadline / 10)))}s`;
  const agentArgs = ["diagnose", "--out", "-", "--timeout", perSource, ...(o.since ? ["--since", o.since] : [])];
  const command = o.sandbox
    ? ["winfleet-agent", ...agentArgs, "--config", "$(WINFLEET_AGENT_CONFIG)"]
    : [HOST_NODE, HOST_AGENT, ...agentArgs, "--config", `${INSTALL}\\agent.json`];
  const node = o.node
    .slice(0, 30)
    .replace(/[^a-z0-9-]/g, "-")
    .replace(/-+$/, "");
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: `winfleet-diagnose-${node}-${randomBytes(3).toString("hex")}`,
      namespace: o.namespace,
      labels: { "app.kubernetes.io/name": "winfleet-diagnose", "app.kubernetes.io/managed-by": "winfleet" },
      annotations: { "winfleet.io/node": o.node },
    },
    spec: {
      nodeName: o.node,
      restartPolicy: "Never",
      activeDeadlineSeconds: deadline,
      terminationGracePeriodSeconds: 5,
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      hostNetwork: true,
      securityContext: { windowsOptions: { hostProcess: true, runAsUserName: "NT AUTHORITY\\SYSTEM" } },
      tolerations: [{ operator: "Exists" }],
      containers: [
        {
          name: CONTAINER,
          image: o.image,
          command,
          resources: { requests: { cpu: "10m", memory: "64Mi" }, limits: { memory: "1Gi" } },
        },
      ],
    },
  };
}

/** Why a pod is done or stuck, in one line (the node's words made safe to print); undefined while it may still come. */
function podTrouble(pod: Pod): string | undefined {
  const trouble = rawPodTrouble(pod);
  return trouble === undefined ? undefined : printable(trouble);
}

function rawPodTrouble(pod: Pod): string | undefined {
  const s = pod.status ?? {};
  const state = s.containerStatuses?.[0]?.state;
  if (s.phase === "Failed") {
    const t = state?.terminated;
    return `failed${s.reason ? `: ${s.reason}` : ""}${s.message ? ` — ${s.message}` : ""}${t ? ` (the agent exited ${t.exitCode}${t.reason ? `, ${t.reason}` : ""})` : ""}`;
  }
  const unschedulable = s.conditions?.find((c) => c.type === "PodScheduled" && c.status === "False");
  if (unschedulable) return `is unschedulable: ${unschedulable.reason ?? ""} ${unschedulable.message ?? ""}`.trim();
  const waiting = state?.waiting;
  if (waiting?.reason && STUCK.has(waiting.reason))
    return `cannot start: ${waiting.reason}${waiting.message ? ` — ${waiting.message}` : ""}`;
  return undefined;
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const t = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });

/**
 * The namespace to use and the node's upgrader there: the one asked for, or else the node's stack's default namespace
 * (`winfleet-<stack>`) and then `winfleet-system`, where a stack naming its namespace (as the local fleet and stacks
 * older than per-stack namespaces do) runs its upgraders. When neither serves, the refusal that says most is thrown.
 */
async function findUpgrader(
  api: OperatorApi,
  asked: string | undefined,
  node: Node,
): Promise<{ namespace: string; upgrader: Awaited<ReturnType<typeof upgraderFor>> }> {
  const stack = node.metadata.labels?.[STACK_LABEL];
  const candidates = asked !== undefined ? [asked] : [...(stack ? [`winfleet-${stack}`] : []), "winfleet-system"];
  const errors: unknown[] = [];
  for (const namespace of [...new Set(candidates)]) {
    try {
      return { namespace, upgrader: await upgraderFor(api, namespace, node) };
    } catch (e) {
      errors.push(e);
    }
  }
  throw errors.find((e) => !(e instanceof AgentError && e.code === AgentErrorCode.NotFound)) ?? errors[0];
}

/** Fetches the node's archive through the cluster and writes it to `out`. */
export async function diagnoseNode(o: DiagnoseNodeOptions): Promise<DiagnoseNodeResult> {
  const { api } = o;
  const say = o.progress ?? (() => undefined);
  const node = await readyNode(api, o.node);
  const { namespace, upgrader } = await findUpgrader(api, o.namespace, node);
  const deadlineAt = Date.now() + o.timeoutMs;
  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(), o.timeoutMs);
  // A refusal before the pod exists must not leave the process waiting for this.
  timer.unref();
  const signal = AbortSignal.any([o.signal, timeout.signal]);
  const spec = diagnosePod({
    node: o.node,
    namespace,
    image: upgrader.image,
    sandbox: upgrader.sandbox,
    timeoutMs: o.timeoutMs,
    ...(o.since ? { since: o.since } : {}),
  });
  if (o.signal.aborted) throw failure("interrupted before the diagnose pod was made");
  const created = await api
    .json<Pod>("POST", `/api/v1/namespaces/${enc(namespace)}/pods`, spec)
    .catch((e: unknown) => refused(e, `creating the diagnose pod in ${namespace}`));
  const name = created.metadata.name;
  const podPath = `/api/v1/namespaces/${enc(namespace)}/pods/${enc(name)}`;
  say(`pod ${namespace}/${name} on ${o.node} (image ${upgrader.image}, from ${upgrader.daemonSet})`);
  let phase = "Pending";
  const stopped = (what: string): AgentError => {
    if (o.signal.aborted)
      return failure(`interrupted while ${what}; pod ${namespace}/${name} deleted`, AgentErrorCode.Unavailable);
    return failure(
      `timed out after ${Math.round(o.timeoutMs / 1000)} s while ${what} (pod ${namespace}/${name} was ${phase}; --timeout gives more time)`,
      AgentErrorCode.Unavailable,
    );
  };
  try {
    // Until the agent runs (or has run): the pod's troubles are reported as they appear.
    for (;;) {
      if (signal.aborted) throw stopped("waiting for the pod to start");
      const pod = await api.json<Pod>("GET", podPath).catch((e: unknown) => refused(e, `reading pod ${name}`));
      phase = pod.status?.phase ?? "Pending";
      const trouble = podTrouble(pod);
      if (trouble && phase !== "Failed") throw failure(`the diagnose pod ${namespace}/${name} on ${o.node} ${trouble}`);
      if (phase === "Running" || phase === "Succeeded" || phase === "Failed") break;
      await sleep(500, signal);
    }
    say(`collecting on ${o.node}…`);
    for (;;) {
      const reader = new FrameReader();
      let frameError: unknown;
      const reading = new AbortController();
      const both = AbortSignal.any([signal, reading.signal]);
      await api
        .stream(
          `${podPath}/log?container=${CONTAINER}&follow=true`,
          (text) => {
            try {
              reader.push(text);
              if (reader.done) reading.abort();
            } catch (e) {
              frameError = e;
              reading.abort();
            }
          },
          both,
        )
        .catch((e: unknown) => {
          if (both.aborted) return;
          // The API server reads logs from the kubelet itself: a 5xx is almost always that connection.
          if (e instanceof KubeError && e.status >= 500) {
            throw failure(
              `reading the log of pod ${name}: the API server could not read it from the kubelet of ${o.node} (kubectl logs fails the same way; is the kubelet's port, 10250 by default, reachable from the control plane?): ${e.message}`,
            );
          }
          refused(e, `reading the log of pod ${name}`);
        });
      if (frameError) throw failure(`the archive from ${o.node} is damaged: ${errorMessage(frameError)}`);
      if (reader.done) {
        let data: Buffer;
        try {
          data = reader.result();
        } catch (e) {
          throw failure(
            `the archive from ${o.node} is damaged: ${e instanceof FrameError ? e.message : errorMessage(e)}; nothing was written`,
          );
        }
        await writeFileAtomic(o.out, data, { mode: 0o600 }).catch((e: unknown) => {
          throw failure(
            `cannot write ${o.out} (${(e as NodeJS.ErrnoException).code ?? errorMessage(e)}); nothing was written`,
            AgentErrorCode.InvalidInput,
          );
        });
        return { out: o.out, bytes: data.length, sha256: reader.announced?.sha256 ?? "", pod: `${namespace}/${name}` };
      }
      if (signal.aborted) throw stopped("the node collected");
      // The log ended without the archive: the agent failed, or the stream was cut while it ran.
      const pod = await api.json<Pod>("GET", podPath).catch((e: unknown) => refused(e, `reading pod ${name}`));
      phase = pod.status?.phase ?? phase;
      if (phase === "Running" && Date.now() < deadlineAt) {
        await sleep(1000, signal);
        continue;
      }
      // What the node printed is shown, never acted on by the operator's terminal.
      const said = reader.other
        .slice(-5)
        .map((l) => printable(l, 300))
        .join("\n  ");
      const trouble = podTrouble(pod) ?? `ended (${phase}) without printing the archive`;
      throw failure(
        `the diagnose pod ${namespace}/${name} on ${o.node} ${trouble}${said ? `; it said:\n  ${said}` : ""}`,
      );
    }
  } finally {
    clearTimeout(timer);
    await api
      .json("DELETE", podPath, { apiVersion: "v1", kind: "DeleteOptions", propagationPolicy: "Background" })
      .catch((e: unknown) => {
        if (!(e instanceof KubeError && e.status === 404))
          say(
            `warning: pod ${namespace}/${name} was not deleted (${errorMessage(e)}): delete it with kubectl -n ${namespace} delete pod ${name}`,
          );
      });
  }
}
