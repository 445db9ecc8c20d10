/**
 * The stack side other folders use (stack files); the Pulumi program's own entry is index.ts.
 * The folder's public surface: other folders import from here, never from the files behind it.
 */
export { readStackFile, stackPath } from "./stack-file";
export { clusterObjects } from "./cluster-objects";
