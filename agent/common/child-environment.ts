/**
 * The environment a child process starts from: what any program needs to find
 * the system (PATH, SystemRoot, TEMP…), the user's locale and the proxy
 * settings, taken from this process's own environment, and nothing else. The
 * agent runs as SYSTEM (root off Windows) and its environment may hold what no
 * child should see (a content SAS token, credentials of the service manager,
 * loader settings), so neither host processes nor lifecycle commands inherit it whole.
 */

/** What every child inherits, when this process has it. */
const BASE_POSIX = ["PATH", "HOME", "LANG", "LC_ALL", "TZ", "USER", "LOGNAME", "TMPDIR"];
const BASE_WINDOWS = [
  "SystemRoot",
  "SystemDrive",
  "windir",
  "ComSpec",
  "PATH",
  "PATHEXT",
  "TEMP",
  "TMP",
  "ProgramData",
  "ProgramFiles",
  "ProgramFiles(x86)",
  "ProgramW6432",
  "CommonProgramFiles",
  "CommonProgramFiles(x86)",
  "CommonProgramW6432",
  "ALLUSERSPROFILE",
  "PUBLIC",
  "USERPROFILE",
  "APPDATA",
  "LOCALAPPDATA",
  "COMPUTERNAME",
  "USERNAME",
  "USERDOMAIN",
  "NUMBER_OF_PROCESSORS",
  "PROCESSOR_ARCHITECTURE",
  "PROCESSOR_IDENTIFIER",
  "PROCESSOR_LEVEL",
  "PROCESSOR_REVISION",
  "OS",
  "PSModulePath",
  "DriverData",
];
const BASE_PROXY = ["HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy"];
const POSIX_DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/** The base environment for children, taken from this process's (`parent`). */
export function baseEnvironment(parent: NodeJS.ProcessEnv, platform: NodeJS.Platform): Record<string, string> {
  const windows = platform === "win32";
  const names = [...(windows ? BASE_WINDOWS : BASE_POSIX), ...BASE_PROXY];
  const lookup = new Map<string, string>();
  for (const [k, v] of Object.entries(parent)) {
    if (v !== undefined) lookup.set(windows ? k.toUpperCase() : k, v);
  }
  const env: Record<string, string> = {};
  for (const name of names) {
    const value = lookup.get(windows ? name.toUpperCase() : name);
    if (value !== undefined) env[name] = value;
  }
  if (!windows && env.PATH === undefined) env.PATH = POSIX_DEFAULT_PATH;
  return env;
}
