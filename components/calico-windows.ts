/**
 * `CalicoWindows`: turns on Calico for Windows in the cluster's Tigera
 * operator (Calico 3.31's one documented Windows install: HostProcess
 * containers the operator deploys). The endpoint ConfigMap and winfleet's
 * fields of the Installation are server-side patches, so what else the
 * cluster keeps there stays its own and a destroy gives back only these
 * fields. The Installation must exist (the cluster's Calico installed by the
 * operator): it is read first, so a cluster without one fails the update with
 * that said, rather than a patch creating an Installation that would install
 * Calico.
 */
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { type CalicoWindowsSettings, INSTALLATION, renderCalicoWindows } from "./calico-windows-render";
import { kubeResourceName } from "./kube-objects";

/** Arguments of {@link CalicoWindows}. */
export type CalicoWindowsArgs = CalicoWindowsSettings;

/**
 * Git is the source of truth for these fields: one an operator changed out of band is taken back (server-side
 * apply's force), as for every object winfleet deploys.
 */
const FORCE = { "pulumi.com/patchForce": "true" } as const;

/** The cluster's operator configured for Windows nodes. */
export class CalicoWindows extends pulumi.ComponentResource {
  /** The Installation's name, once read and patched. */
  readonly installation: pulumi.Output<string>;

  constructor(name: string, args: CalicoWindowsArgs, opts?: pulumi.ComponentResourceOptions) {
    super("winfleet:index:CalicoWindows", name, {}, opts);
    const { endpoint, installation } = renderCalicoWindows(args);
    const existing = k8s.apiextensions.CustomResource.get(`${name}-installation-${INSTALLATION}`, {
      apiVersion: installation.apiVersion,
      kind: installation.kind,
      id: INSTALLATION,
      parent: this,
    });
    const withForce = (o: typeof endpoint): typeof endpoint => ({
      ...o,
      metadata: { ...o.metadata, annotations: { ...(o.metadata.annotations ?? {}), ...FORCE } },
    });
    const configMap = new k8s.core.v1.ConfigMapPatch(
      kubeResourceName(name, endpoint),
      withForce(endpoint) as unknown as k8s.core.v1.ConfigMapPatchArgs,
      { parent: this },
    );
    const patch = new k8s.apiextensions.CustomResourcePatch(
      `${kubeResourceName(name, installation)}-windows`,
      withForce(installation),
      { parent: this, dependsOn: [existing, configMap] },
    );
    this.installation = patch.metadata.apply((m) => m.name);
    this.registerOutputs({ installation: this.installation });
  }
}
