import { escapeHtml } from "../templates/render";

/**
 * Serving a landing page, pure: the workspace's HTML as written (a whole
 * document, or a body put in one), its form markers replaced by the forms'
 * markup, and the headers that sandbox it. The sandbox (no
 * `allow-same-origin`) gives the page an opaque origin: its scripts cannot
 * read this service's cookies or call its API as the visitor's session.
 */

/** `<div data-cms-form="<formId>"></div>` draws that form of the workspace. */
const FORM_MARKER = /<div\s+data-cms-form="([A-Za-z0-9_-]{1,64})"\s*>\s*<\/div>/g;

export const LANDING_PAGE_HEADERS = {
  "Content-Security-Policy":
    "sandbox allow-forms allow-scripts allow-popups allow-popups-to-escape-sandbox allow-top-navigation-by-user-activation",
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "strict-origin-when-cross-origin",
};

export function formIdsIn(html: string): string[] {
  return [...new Set([...html.matchAll(FORM_MARKER)].map((m) => m[1]))];
}

/**
 * The document served: markers replaced by their form (an unknown or closed
 * form leaves nothing), the forms' style (in the head when the page has one)
 * and script once, and `pageToken` for the website script (script-origin.ts)
 * in `<meta name="cms-page">`.
 */
export function landingDocument(
  title: string,
  html: string,
  formMarkup: Record<string, string>,
  pageToken: string,
): string {
  let drewForm = false;
  let body = html.replace(FORM_MARKER, (_marker, id: string) => {
    const markup = Object.hasOwn(formMarkup, id) ? formMarkup[id] : undefined;
    if (!markup) return "";
    drewForm = true;
    return markup;
  });
  const head = `<meta name="cms-page" content="${escapeHtml(pageToken)}">${drewForm ? '<link rel="stylesheet" href="/form.css">' : ""}`;
  let scripts = drewForm ? '<script src="/form.js" data-enhance></script>' : "";
  if (/^\s*(<!doctype|<html)/i.test(body)) {
    if (/<\/head>/i.test(body)) body = body.replace(/<\/head>/i, `${head}</head>`);
    else scripts = head + scripts;
    return /<\/body>/i.test(body)
      ? body.replace(/<\/body>(?![\s\S]*<\/body>)/i, `${scripts}</body>`)
      : body + scripts;
  }
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
${head}
</head>
<body>
${body}
${scripts}
</body>
</html>
`;
}
