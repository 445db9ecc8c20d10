/**
 * The environment a host process starts with. The broker runs as SYSTEM (root
 * off Windows) and a client is only trusted to pick a whitelisted binary, so a
 * child starts from a minimal base taken from the broker's own environment
 * (what any program needs to find the system: PATH, SystemRoot…), plus the
 * variables the client sets, and only those an allow-list names. Variables that
 * make a loader or an interpreter run code of the caller's choosing (LD_PRELOAD,
 * NODE_OPTIONS, PYTHONSTARTUP…) or that decide which files the system itself
 * loads (PATH, SystemRoot) are refused whatever the allow-list says: with them a
 * whitelisted binary would run anything at all.
 */
import { baseEnvironment, AgentError, AgentErrorCode, errorMessage } from "../common";
import { normaliseHostPath } from "./whitelist";

export { baseEnvironment };

/**
 * Names (or `PREFIX*` patterns) no client may set and no config may allow,
 * compared without regard to case (Windows variables ignore case).
 */
export const DENIED_ENV_PATTERNS: readonly string[] = [
  // Dynamic loaders (glibc, musl, macOS, AIX, HP-UX) and what glibc loads on request.
  "LD_*",
  "DYLD_*",
  "_RLD*",
  "LIBPATH",
  "SHLIB_PATH",
  "GCONV_PATH",
  "GETCONF_DIR",
  "HOSTALIASES",
  "LOCALDOMAIN",
  "RES_OPTIONS",
  "NLSPATH",
  "LOCPATH",
  "MALLOC_*",
  "GLIBC_TUNABLES",
  "OPENSSL_*",
  "SSLKEYLOGFILE",
  // Interpreters and runtimes.
  "NODE_*",
  "PYTHON*",
  "PERL*",
  "RUBY*",
  "GEM_*",
  "BUNDLE_*",
  "LUA_*",
  "TCL*",
  "JAVA_TOOL_OPTIONS",
  "_JAVA_OPTIONS",
  "JDK_JAVA_OPTIONS",
  "CLASSPATH",
  "COR_*",
  "CORECLR_*",
  "COMPLUS_*",
  "DOTNET_*",
  "GIT_*",
  // Shells.
  "BASH_ENV",
  "ENV",
  "BASH_FUNC_*",
  "SHELLOPTS",
  "BASHOPTS",
  "PS4",
  "IFS",
  "CDPATH",
  "PROMPT_COMMAND",
  "ZDOTDIR",
  // Where the system finds programs and libraries (the base environment sets these).
  "PATH",
  "PATHEXT",
  "COMSPEC",
  "SYSTEMROOT",
  "WINDIR",
  "SYSTEMDRIVE",
  "PSMODULEPATH",
  "PSEXECUTIONPOLICYPREFERENCE",
  "__PSLOCKDOWNPOLICY",
  "__COMPAT_LAYER",
  "HOME",
  "USERPROFILE",
  "APPDATA",
  "LOCALAPPDATA",
  "PROGRAMDATA",
  "TEMP",
  "TMP",
  "TMPDIR",
];

/**
 * What a client may set when the config names nothing else: the proxy
 * variables (a container's proxy applies to what it starts on the host) and the
 * content SAS token the upgrader hands the agent it starts.
 */
export const DEFAULT_CLIENT_ENV: readonly string[] = [
  "HTTP_PROXY",
  "HTTPS_PROXY",
  "NO_PROXY",
  "http_proxy",
  "https_proxy",
  "no_proxy",
  "WINFLEET_CONTENT_SAS",
];

/** A name or a `PREFIX*` pattern, as the allow-list and deny-list are written. */
export const ENV_PATTERN = /^[A-Za-z_][A-Za-z0-9_()]*\*?$/;

function matches(pattern: string, name: string, ignoreCase: boolean): boolean {
  const p = ignoreCase ? pattern.toUpperCase() : pattern;
  const n = ignoreCase ? name.toUpperCase() : name;
  return p.endsWith("*") ? n.startsWith(p.slice(0, -1)) : n === p;
}

/** The deny-list pattern `name` falls under, if any (case ignored). */
export function deniedBy(name: string): string | undefined {
  return DENIED_ENV_PATTERNS.find((p) => matches(p, name, true));
}

/**
 * Why an allow-list entry may not be configured, or undefined when it may: a
 * pattern that would let through any denied variable is refused too.
 */
export function allowEntryProblem(entry: string): string | undefined {
  if (!ENV_PATTERN.test(entry)) return "must be a variable name, or a prefix ending in *";
  const hit = entry.endsWith("*")
    ? DENIED_ENV_PATTERNS.find(
        (p) => matches(entry, p.replace(/\*$/, ""), true) || matches(p, entry.slice(0, -1), true),
      )
    : deniedBy(entry);
  return hit === undefined
    ? undefined
    : `${entry} would allow ${hit}, which makes a loader or interpreter run code a client chooses`;
}

/** Checks a client's `NAME=value` items against the allow-list. */
export class EnvPolicy {
  private readonly allowed: readonly string[];
  /** Normalised, lower-cased binary path → the names allowed for it besides `allowed`. */
  private readonly perPath: ReadonlyMap<string, readonly string[]>;

  /**
   * `allowed`: names or `PREFIX*` patterns for every binary; `perPath`: more of
   * them for one binary, by its path (all already validated by the config).
   */
  constructor(
    allowed: readonly string[] | undefined,
    private readonly platform: NodeJS.Platform = process.platform,
    perPath: Readonly<Record<string, readonly string[]>> | undefined = {},
  ) {
    this.allowed = allowed === undefined || allowed.length === 0 ? DEFAULT_CLIENT_ENV : allowed;
    this.perPath = new Map(
      Object.entries(perPath).map(([path, names]) => {
        try {
          return [normaliseHostPath(path, platform).toLowerCase(), names];
        } catch (e) {
          throw new AgentError(
            AgentErrorCode.InvalidInput,
            `whiteList.processEnvs[${JSON.stringify(path)}]: ${errorMessage(e)}`,
          );
        }
      }),
    );
  }

  /**
   * The variables `items` set for the binary at `path`; throws PERMISSION_DENIED
   * naming the first variable that is denied or not allowed, INVALID_ARGUMENT
   * for a malformed item.
   */
  check(items: readonly string[], path?: string): Record<string, string> {
    const env: Record<string, string> = {};
    const windows = this.platform === "win32";
    const allowed = [
      ...this.allowed,
      ...(path === undefined ? [] : (this.perPath.get(normaliseHostPath(path, this.platform).toLowerCase()) ?? [])),
    ];
    for (const [i, item] of items.entries()) {
      const eq = item.indexOf("=");
      if (eq <= 0)
        throw new AgentError(AgentErrorCode.InvalidInput, `Envs[${i}] ${JSON.stringify(item)} is not NAME=value`);
      const name = item.slice(0, eq);
      const value = item.slice(eq + 1);
      if (item.includes("\0"))
        throw new AgentError(AgentErrorCode.InvalidInput, `Envs[${i}] (${name}) contains a NUL character`);
      const denied = deniedBy(name);
      if (denied !== undefined) {
        throw new AgentError(
          AgentErrorCode.PermissionDenied,
          `Envs[${i}]: ${name} may not be set by a client (it matches ${denied}: loader, interpreter and system-path variables are refused)`,
        );
      }
      if (!allowed.some((p) => matches(p, name, windows))) {
        throw new AgentError(
          AgentErrorCode.PermissionDenied,
          `Envs[${i}]: ${name} is not in the broker's environment allow-list for this binary (whiteList.envs and processEnvs: ${allowed.join(", ")})`,
        );
      }
      env[name] = value;
    }
    return env;
  }
}
