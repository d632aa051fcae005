import { ownOrListedOrigin } from "../../lib/origins";
import { signLinkToken, verifyLinkToken } from "../messages/links";
import type { WorkspaceId } from "../../lib/tenancy";

/** What the website script's endpoints know of a site key's workspace. */
export interface ScriptSite {
  workspaceId: WorkspaceId;
  allowedOrigins: string[];
}

/**
 * The token a landing page carries as served (`<meta name="cms-page">`),
 * naming its workspace and itself; valid for a day.
 */
export const landingPageToken = (workspaceId: WorkspaceId, landingPageId: string): string =>
  signLinkToken({ typ: "page", ws: workspaceId, sub: landingPageId });

/**
 * Whether the website script may answer a browser page of `origin`: this
 * service's own pages, the workspace's `allowedOrigins`, and the
 * workspace's own landing pages. Those are served sandboxed
 * (landing-page.ts), so their requests say `Origin: null` and carry no
 * Referer (a browser sends none from an opaque origin). `null` is what any
 * sandboxed frame or `data:` document on any site sends too, so it proves
 * nothing by itself: it is accepted only with `pageToken`, a token this
 * service signed into the landing page it served, for this workspace. A
 * page elsewhere would have to fetch a fresh copy of ours from its server
 * to borrow one (no more than a script outside a browser, which no Origin
 * check stops, can do anyway).
 */
export function scriptOriginAllowed(
  origin: string,
  pageToken: string | undefined,
  site: ScriptSite,
): boolean {
  if (origin !== "null") return ownOrListedOrigin(origin, site.allowedOrigins);
  if (!pageToken) return false;
  try {
    return verifyLinkToken(pageToken, ["page"]).ws === site.workspaceId;
  } catch {
    return false;
  }
}
