import type { IncomingMessage, ServerResponse } from "node:http";
import helmet from "helmet";

/**
 * The security headers of every answer but a landing page's (helmet's
 * defaults, with these choices):
 * - scripts only from this service's own files (no inline script, no
 *   `eval`), so markup that slipped into a page could not run;
 * - no page of ours may be framed (`frame-ancestors 'none'` and
 *   `X-Frame-Options: DENY`): sign-in and the preference pages must not be
 *   clickjacked, and forms go on other sites through their embed script
 *   (contract: `GET /api/forms/{formId}/embed`), which draws the form in the
 *   site's own page, not in a frame;
 * - no `form-action`: a form of the workspace is sent on, after its post,
 *   to the workspace's own site (`redirectUrl`), which Chromium checks
 *   against `form-action` too;
 * - no `Cross-Origin-Resource-Policy`: other sites load `cms.js`, the forms'
 *   embed script and asset downloads;
 * - no `Strict-Transport-Security` nor `upgrade-insecure-requests`: TLS is
 *   the proxy's in front of the service, which knows whether it has it.
 */
const appHeaders = helmet({
  contentSecurityPolicy: {
    directives: {
      "frame-ancestors": ["'none'"],
      "form-action": null,
      "upgrade-insecure-requests": null,
    },
  },
  crossOriginResourcePolicy: false,
  strictTransportSecurity: false,
  xFrameOptions: { action: "deny" },
});

/** Landing pages (`/p/{workspaceSlug}/{slug}`) are the workspace's HTML: they keep their own sandboxing headers. */
const LANDING_PAGE_PATH = /^\/p\//;

export function setSecurityHeaders(req: IncomingMessage, res: ServerResponse): void {
  if (LANDING_PAGE_PATH.test(req.url ?? "")) return;
  // helmet's header setters are synchronous and fail only on a bad configuration, which the first request shows.
  appHeaders(req, res, (err?: unknown) => {
    if (err) throw err;
  });
}
