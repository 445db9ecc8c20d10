/**
 * What an operator does to a node through its cluster: `winfleet diagnose NODE`.
 * The folder's public surface: other folders import from here, never from the files behind it.
 */
export { diagnoseNode } from "./diagnose-node";
export { operatorApi } from "./operator-api";
