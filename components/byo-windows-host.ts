/**
 * `ByoWindowsHost`: a Windows host you already own, reached over SSH (Windows'
 * OpenSSH server) with @pulumi/command — the successor of the WinRM/WMI path
 * of the original design. The content archive and the bootstrap are copied to
 * the host, and the bootstrap runs with the node's secret variables (join
 * token, content secrets) as one JSON line on its standard input (never on a
 * command line); it runs again whenever its SHA-256 or the content's changes.
 * Credentials are Pulumi secrets.
 */
import * as command from "@pulumi/command";
import * as pulumi from "@pulumi/pulumi";
import { type BootstrapArgs, DEFAULT_INSTALL_DIR, bootstrapHash, renderBootstrap } from "./bootstrap";
import { type NodeSecrets, secretsJson } from "./node-secrets";
import { type NodeConfigArgs, type PoolValues, nodeAgentConfig } from "./pool-render";

/** The host, and how to reach it over SSH. */
export interface ByoHostArgs {
  /** The node name it registers as. */
  readonly name: string;
  readonly address: string;
  readonly port: number;
  readonly user: string;
}

/** Arguments of {@link ByoWindowsHost}. */
export interface ByoWindowsHostArgs {
  /** What every node of the fleet runs and how it joins. */
  readonly node: NodeConfigArgs;
  /** The host's pool: its labels, taint and variables. */
  readonly pool: PoolValues;
  readonly host: ByoHostArgs;
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
}

/** Where uploads land on the host. */
export const UPLOAD_DIR = `${DEFAULT_INSTALL_DIR}\\upload`;

/** icacls arguments that leave the upload directory (and anything in it) to SYSTEM and Administrators. */
export const UPLOAD_ACL = [
  "/setowner '*S-1-5-32-544'",
  "/inheritance:r /grant:r '*S-1-5-18:(OI)(CI)F' '*S-1-5-32-544:(OI)(CI)F'",
] as const;

/**
 * The upload directory made and restricted, before anything is written there: ProgramData hands
 * Users create rights, so a local user could otherwise place (or swap) the bootstrap an
 * administrator runs next. Owner and ACL are set on the directory and whatever is already in it.
 */
export function uploadDirScript(): string {
  const acl = UPLOAD_ACL.map(
    (a) => `icacls.exe '${UPLOAD_DIR}' ${a} /T /C /Q | Out-Null\nif ($LASTEXITCODE -ne 0) { exit $LASTEXITCODE }`,
  );
  return `New-Item -ItemType Directory -Force -Path '${UPLOAD_DIR}' | Out-Null\n${acl.join("\n")}\nexit 0`;
}

/** The commands run over SSH (cmd.exe or PowerShell as the login shell both run them). */
export function byoCommands(contentSha256: string): {
  prepare: string;
  writeBootstrap: string;
  run: string;
  contentPath: string;
} {
  const ps = "powershell.exe -NoProfile -NonInteractive -ExecutionPolicy Bypass";
  return {
    // Encoded, so neither login shell (cmd.exe or PowerShell) reads its quotes or variables.
    prepare: `${ps} -EncodedCommand ${Buffer.from(uploadDirScript(), "utf16le").toString("base64")}`,
    // The script arrives on stdin, so no quoting of its text is ever needed.
    writeBootstrap: `${ps} -Command "[Console]::In.ReadToEnd() | Set-Content -Encoding UTF8 -NoNewline -LiteralPath '${UPLOAD_DIR}\\bootstrap.ps1'"`,
    run: `${ps} -File "${UPLOAD_DIR}\\bootstrap.ps1" -SecretsFromStdin`,
    contentPath: `${UPLOAD_DIR}\\content-${contentSha256.slice(0, 16)}.tgz`,
  };
}

/** An existing Windows host joined to the fleet. */
export class ByoWindowsHost extends pulumi.ComponentResource {
  readonly nodeName: string;
  readonly bootstrapHash: string;

  constructor(name: string, args: ByoWindowsHostArgs, opts?: pulumi.ComponentResourceOptions) {
    super("winfleet:index:ByoWindowsHost", name, {}, opts);
    const { host } = args;
    const connection = {
      host: host.address,
      port: host.port,
      user: host.user,
      ...(args.credential.kind === "privateKey"
        ? { privateKey: pulumi.secret(args.credential.value) }
        : { password: pulumi.secret(args.credential.value) }),
    };
    const sha = args.content.sha256;
    const commands = byoCommands(sha);
    const script = renderBootstrap({
      ...args.bootstrap,
      content: { kind: "file", path: commands.contentPath, sha256: sha },
      agentConfig: { ...nodeAgentConfig(args.node, args.join.variables, args.pool), nodeName: host.name },
      secretVariables: Object.keys(args.join.secrets),
    });
    this.bootstrapHash = bootstrapHash(script);
    this.nodeName = host.name;

    const prepare = new command.remote.Command(
      `${name}-prepare`,
      { connection, create: commands.prepare },
      { parent: this },
    );
    const copy = new command.remote.CopyFile(
      `${name}-content`,
      {
        connection,
        localPath: args.content.archivePath,
        remotePath: commands.contentPath.replace(/\\/g, "/"),
        triggers: [sha],
      },
      { parent: this, dependsOn: [prepare] },
    );
    const upload = new command.remote.Command(
      `${name}-upload-bootstrap`,
      { connection, create: commands.writeBootstrap, stdin: script, triggers: [this.bootstrapHash] },
      { parent: this, dependsOn: [prepare] },
    );
    new command.remote.Command(
      `${name}-bootstrap`,
      { connection, create: commands.run, stdin: secretsJson(args.join.secrets), triggers: [this.bootstrapHash, sha] },
      { parent: this, dependsOn: [copy, upload] },
    );
    this.registerOutputs({ nodeName: this.nodeName, bootstrapHash: this.bootstrapHash });
  }
}
