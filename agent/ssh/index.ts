/**
 * Sandbox hosts reached over SSH: the bring-your-own path's POSIX twin on this machine.
 * The folder's public surface: other folders import from here, never from the files behind it.
 */
export { type NetworkMode } from "./network";
export { type SshHost, type SshHosts, type SshHostsOptions, SSHD, startSshHosts } from "./sandbox-hosts";
