/**
 * Content: the catalog, its schema, loading, validation, analysis and the content bundle build.
 * The folder's public surface: other folders import from here, never from the files behind it.
 */
export { analyzeContent } from "./analysis";
export { buildContent } from "./build";
export { type Catalog, type CatalogComponent, loadCatalog } from "./catalog";
export { configPaths } from "./config-paths";
export { renderContentReference } from "./docs";
export { nodeLabelProblems } from "./kubelet-config";
export { parseMetadata } from "./load";
export {
  type ComponentMetadata,
  componentName,
  DISRUPTION_TEXT,
  type Disruption,
  DISRUPTIONS,
  restartsText,
  type ShellKind,
  SHELLS,
  splitPackageRef,
  type Template,
  variableName,
} from "./schema";
export { validateContent } from "./validate";
export { compareVersions } from "./versions";
