/**
 * What the suites under test/ share, each helper defined once: temporary
 * directories, bounded waits, processes and ports, the real agent and its
 * content trees, signed releases, the real engines, the external tools a test
 * needs, seeded randomness and file-tree snapshots. Import from here.
 */
export * from "./agent";
export * from "./bundle";
export * from "./engines";
export * from "./kubeconfig";
export * from "./join";
export * from "./kubernetes";
export * from "./listeners";
export * from "./process";
export * from "./release";
export * from "./rng";
export * from "./secrets";
export * from "./temp";
export * from "./tools";
export * from "./tree";
export * from "./wait";
export * from "./wins-client";
