/**
 * An internal mirror for every download a node makes on first boot (air-gapped
 * fleets): a URL `https://<host>/<path>` is fetched as
 * `<mirror>/<host>/<path>` instead, so one mirror holds every upstream side by
 * side without a name clash. The digest pinned for each download is checked
 * all the same, so a mirror can serve nothing but the pinned bytes. The same
 * rule runs on the node for the content's artifacts (winfleet-common's
 * Resolve-WinfleetArtifactUrl, from the WINFLEET_ARTIFACT_MIRROR variable).
 */

/** The variable the content's downloads read the mirror from. */
export const MIRROR_VARIABLE = "WINFLEET_ARTIFACT_MIRROR";

/** `url` as fetched through `mirror` (its base URL), or `url` itself without one. */
export function mirroredUrl(url: string, mirror: string | undefined): string {
  if (mirror === undefined || mirror === "") return url;
  const u = new URL(url);
  return `${mirror.replace(/\/+$/, "")}/${u.host}${u.pathname}${u.search}`;
}
