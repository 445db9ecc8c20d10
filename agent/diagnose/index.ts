/**
 * `diagnose`: collecting a node's evidence into one archive, and its summary.
 * The folder's public surface: other folders import from here, never from the files behind it.
 */
export { archiveOf, diagnose } from "./diagnose";
export { formatSummary, summarize } from "./summary";
export { FrameError, FrameReader, frameArchive, unframeArchive } from "./transport";
