import fs from "node:fs";
import path from "node:path";
import { Liquid } from "liquidjs";
import Negotiator from "negotiator";
import type { AppContext } from "./moleculer-types";
import { PUBLIC_DIR } from "./paths";

/** Answer with one of the HTML pages under public/. */
export function servePage(ctx: AppContext, file: string): fs.ReadStream {
  ctx.meta.$responseType = "text/html; charset=utf-8";
  return fs.createReadStream(path.join(PUBLIC_DIR, file));
}

/**
 * Pages drawn from data (unsubscribe, preference centre): Liquid templates
 * under public/pages with every output HTML-escaped, so nothing a contact or
 * a workspace wrote can inject markup. They share public/pages.css with the
 * sign-in page.
 */
const pageEngine = new Liquid({
  root: path.join(PUBLIC_DIR, "pages"),
  extname: ".liquid",
  outputEscape: "escape",
  strictFilters: true,
  ownPropertyOnly: true,
  cache: true,
});

export async function renderPage(
  ctx: AppContext,
  name: string,
  data: Record<string, unknown>,
  status = 200,
): Promise<string> {
  ctx.meta.$responseType = "text/html; charset=utf-8";
  if (status !== 200) ctx.meta.$statusCode = status;
  return pageEngine.renderFile(name, data) as Promise<string>;
}

/** A page's part as HTML, for answers that carry it elsewhere (a form drawn by its embed script). */
export async function renderPartial(name: string, data: Record<string, unknown>): Promise<string> {
  return pageEngine.renderFile(name, data) as Promise<string>;
}

/**
 * Whether the client would rather read HTML than JSON, by its Accept header's
 * order and q-values (a browser's lists text/html first; none, or any, means JSON).
 */
export function prefersHtml(accept: string | undefined): boolean {
  if (!accept) return false;
  return new Negotiator({ headers: { accept } }).mediaType(["application/json", "text/html"]) === "text/html";
}
