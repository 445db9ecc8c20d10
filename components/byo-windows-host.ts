/**
 * `ByoWindowsHost`: a Windows host you already own, reached over SSH (Windows' OpenSSH server)
 * with @pulumi/command — the successor of the WinRM/WMI path of the original design — or, with
 * `platform: posix`, its twin: a sandbox host with sshd, for trying the path on one machine.
 * The content archive and the bootstrap are copied to the host (`CopyToRemote`; a stack an earlier
 * release deployed with the deprecated `CopyFile` gets the copy once more on its first `up`, and
 * the CopyFile's record is deleted, running nothing: `command` 1.2.1 cannot read a CopyFile's state
 * as a CopyToRemote's, so no alias can carry it over), and the
 * bootstrap runs with the node's secret variables (join token, content secrets) as one JSON
 * line on its standard input, never on a command line. Credentials are Pulumi secrets.
 *
 * The connection pins the host's public key (`hostKey`), so a host that presents any other is
 * refused during the key exchange, before the credential or any secret is sent; with
 * `trustOnFirstUse` the key is read once with ssh-keyscan and pinned from then on.
 *
 * The one gate: only the upgrader moves a host's versions. The bootstrap run, and the copies
 * it needs, are named by the bootstrap's epoch (bootstrap.ts): a new agent or template version,
 * new content or a rotated secret changes nothing they were created with (their inputs are held
 * as they were), so `pulumi up` runs nothing on the host; a bootstrap that does something new
 * has a new epoch and runs once on every host, `maxUnavailable` hosts at a time (each waits for
 * the host that many places before it, `after`). Deleting the host's `-agent` resource (the
 * host left the stack, or `pulumi destroy`) uninstalls winfleet from it; then its Node, which the
 * stack declares, is deleted.
 */
import * as command from "@pulumi/command";
import * as pulumi from "@pulumi/pulumi";
import { type BootstrapArgs, bootstrapEpoch, bootstrapHash, renderBootstrap } from "./bootstrap";
import { posixBootstrapEpoch, renderPosixBootstrap } from "./bootstrap-posix";
import { type ByoPlatform, byoCommands } from "./byo-commands";
import { kubeResource } from "./kube-objects";
import { type NodeSecrets, secretsJson } from "./node-secrets";
import { type NodeConfigArgs, type PoolValues, nodeAgentConfig } from "./pool-render";

/** The host, and how to reach it over SSH. */
export interface ByoHostArgs {
  /** The node name it registers as. */
  readonly name: string;
  readonly address: string;
  readonly port: number;
  readonly user: string;
  /** Its public host key (`ssh-ed25519 AAAA…`); absent only with `trustOnFirstUse`. */
  readonly hostKey?: string | undefined;
  /** Read the key once with ssh-keyscan on the first up and pin it from then on. */
  readonly trustOnFirstUse?: boolean;
}

/** Arguments of {@link ByoWindowsHost}. */
export interface ByoWindowsHostArgs {
  /** What every node of the fleet runs and how it joins. */
  readonly node: NodeConfigArgs;
  /** The host's pool: its labels, taint and variables. */
  readonly pool: PoolValues;
  readonly host: ByoHostArgs;
  /** Windows (PowerShell over Windows' OpenSSH) or the POSIX sandbox twin. @default "windows" */
  readonly platform?: ByoPlatform;
  readonly bootstrap: Omit<BootstrapArgs, "content" | "agentConfig" | "secretVariables">;
  /** The content archive on this machine and its SHA-256. */
  readonly content: { readonly archivePath: string; readonly sha256: string };
  /**
   * Join variables (non-secret), and the secret variables: the join token under the variable content reads, and the
   * content secrets.
   */
  readonly join: { readonly variables: Readonly<Record<string, string>>; readonly secrets: NodeSecrets };
  /** The private key or the password (a secret) for `host.user`. */
  readonly credential: { readonly kind: "privateKey" | "password"; readonly value: pulumi.Input<string> };
  /** The bootstrap run of the host this one waits for: the pool's batches. */
  readonly after?: pulumi.Resource;
}

/** The key ssh-keyscan printed (`[host]:port ssh-ed25519 AAAA…`), as authorized_keys form. */
export function keyscanKey(output: string, address: string, port: number): string {
  for (const line of output.split("\n")) {
    const [, type, key] = line.trim().split(/\s+/);
    if (type && key && !line.startsWith("#")) return `${type} ${key}`;
  }
  throw new Error(
    `ssh-keyscan found no ed25519 host key at ${address}:${port} (is the host up and its OpenSSH server running?)`,
  );
}

/** The inputs a bootstrap-epoch resource is created with and then holds: nothing it carries may re-run it. */
const HELD = ["connection", "stdin", "create", "source", "remotePath", "triggers"];

/** An existing host joined to the fleet. */
export class ByoWindowsHost extends pulumi.ComponentResource {
  readonly nodeName: string;
  /** SHA-256 of the bootstrap as rendered now (target included). */
  readonly bootstrapHash: string;
  /** The bootstrap's epoch: what names its run. */
  readonly bootstrapEpoch: string;
  /** The bootstrap run: the next batch's hosts wait for it. */
  readonly bootstrapRun: command.remote.Command;

  constructor(name: string, args: ByoWindowsHostArgs, opts?: pulumi.ComponentResourceOptions) {
    super("winfleet:index:ByoWindowsHost", name, {}, opts);
    const { host } = args;
    const platform = args.platform ?? "windows";
    const hostKey =
      host.hostKey ??
      new command.local.Command(
        `${name}-host-key`,
        // The first contact: whoever answers now is trusted from here on (docs/deploying.md#host-keys).
        { create: `ssh-keyscan -t ed25519 -p ${host.port} ${host.address}` },
        { parent: this },
      ).stdout.apply((out) => keyscanKey(out, host.address, host.port));
    const connection = {
      host: host.address,
      port: host.port,
      user: host.user,
      hostKey,
      ...(args.credential.kind === "privateKey"
        ? { privateKey: pulumi.secret(args.credential.value) }
        : { password: pulumi.secret(args.credential.value) }),
    };
    const sha = args.content.sha256;
    const commands = byoCommands(platform, sha, args.bootstrap.node.exe);
    const agentConfig = {
      ...nodeAgentConfig(args.node, args.join.variables, args.pool, platform),
      nodeName: host.name,
    };
    const secretVariables = Object.keys(args.join.secrets);
    const script =
      platform === "posix"
        ? renderPosixBootstrap({
            agent: args.bootstrap.agent,
            content: { path: commands.contentPath, sha256: sha },
            agentConfig,
            secretVariables,
          })
        : renderBootstrap({
            ...args.bootstrap,
            content: { kind: "file", path: commands.contentPath, sha256: sha },
            agentConfig,
            secretVariables,
          });
    this.bootstrapHash = bootstrapHash(script);
    this.bootstrapEpoch = platform === "posix" ? posixBootstrapEpoch(script) : bootstrapEpoch(script);
    this.nodeName = host.name;
    const epoch = this.bootstrapEpoch.slice(0, 12);

    // The host's Node, declared so that the stack deletes it when the host leaves (a node's own credential may not):
    // the kubelet (or the twin's node) finds it there when it joins, as a node an administrator made beforehand.
    const nodeObject = kubeResource(
      name,
      {
        apiVersion: "v1",
        kind: "Node",
        // What the kubelet registers with too: the upgraders select Windows nodes of the pool and stack.
        metadata: { name: host.name, labels: { "kubernetes.io/os": "windows", ...args.pool.labels } },
      },
      { parent: this },
    );
    // The host's registration, holding the current connection (an update runs nothing: it has no create): deleting
    // it removes winfleet from the host, before its Node is deleted.
    new command.remote.Command(
      `${name}-agent`,
      { connection, delete: commands.uninstall },
      { parent: this, dependsOn: [nodeObject] },
    );

    const held = { parent: this, ignoreChanges: HELD };
    // The upload directory, restricted before anything is copied into it (another local user must not swap the
    // bootstrap an administrator runs next).
    const prepare = new command.remote.Command(`${name}-prepare`, { connection, create: commands.prepare }, held);
    const copied = { ...held, dependsOn: [prepare] };
    const content = new command.remote.CopyToRemote(
      `${name}-content`,
      {
        connection,
        source: new pulumi.asset.FileAsset(args.content.archivePath),
        remotePath: commands.contentRemotePath,
      },
      copied,
    );
    const upload = new command.remote.CopyToRemote(
      `${name}-bootstrap-${epoch}-file`,
      { connection, source: new pulumi.asset.StringAsset(script), remotePath: commands.bootstrapRemotePath },
      copied,
    );
    this.bootstrapRun = new command.remote.Command(
      `${name}-bootstrap-${epoch}`,
      { connection, create: commands.run, stdin: secretsJson(args.join.secrets) },
      { ...held, dependsOn: [content, upload, ...(args.after ? [args.after] : [])] },
    );
    this.registerOutputs({ nodeName: this.nodeName, bootstrapHash: this.bootstrapHash, epoch: this.bootstrapEpoch });
  }
}
