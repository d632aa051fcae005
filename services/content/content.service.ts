import { requires } from "../../lib/access";
import { config } from "../../lib/config";
import { defineAction, defineService } from "../../lib/define-service";
import { found, notFound } from "../../lib/errors";
import type { AppContext } from "../../lib/moleculer-types";
import { renderPage } from "../../lib/pages";
import { pageRequest } from "../../lib/pagination";
import { isServiceAvailable } from "../../lib/registry";
import { systemCall } from "../../lib/system-call";
import { workspaceOf, type WorkspaceId } from "../../lib/tenancy";
import { DatabaseMixin } from "../../mixins/database.mixin";
import { assetActions } from "./assets.actions";
import { results, schemas } from "./content.schemas";
import { dynamicActions } from "./dynamic.actions";
import { focusActions } from "./focus.actions";
import { scriptActions } from "./script.actions";
import { formIdsIn, LANDING_PAGE_HEADERS, landingDocument } from "./landing-page";
import { landingPageToken } from "./script-origin";
import * as repo from "./landing-pages.repo";

const WS = "/workspaces/:workspaceId/landing-pages";
const tags = ["Landing pages"];
const read = requires("forms.read");
const write = requires("forms.write");
const publicUrl = () => config().publicUrl;

/** The markup of the page's forms, from the forms service (none when it is not deployed). */
async function formMarkup(
  ctx: AppContext,
  workspaceId: WorkspaceId,
  html: string,
): Promise<Record<string, string>> {
  const formIds = formIdsIn(html);
  if (!formIds.length || !isServiceAvailable(ctx.broker, "forms")) return {};
  return await systemCall<Record<string, string>>(ctx, workspaceId, "forms.markup", { formIds });
}

/**
 * The site content of a workspace (forms.* scopes): landing pages, served
 * sandboxed at /p/{workspaceSlug}/{slug}; dynamic content, focus items and
 * assets (mixins); and the website script's endpoints (script.actions.ts).
 */
export default defineService({
  name: "content",
  mixins: [DatabaseMixin, dynamicActions, focusActions, scriptActions, assetActions],
  settings: { rest: "/" },

  actions: {
    /** Landing pages, newest first; `status`, `search` (name or slug). forms.read. */
    list: defineAction({
      rest: `GET ${WS}`,
      openapi: { tags, summary: "List landing pages" },
      ...read,
      params: schemas.list,
      result: results.list,
      handler: (ctx) => {
        const { status, search } = ctx.params;
        return repo.listPages(workspaceOf(ctx), pageRequest(ctx.params), { status, search }, publicUrl());
      },
    }),

    /** Create a landing page (draft unless `status: published`); a slug the workspace has is 409. forms.write. */
    create: defineAction({
      rest: `POST ${WS}`,
      openapi: { tags, summary: "Create a landing page" },
      ...write,
      params: schemas.create,
      status: 201,
      result: results.landingPage,
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const { workspaceId: _path, ...input } = ctx.params;
        const id = await repo.insertPage(ws, input);
        return found(await repo.findPage(ws, id, publicUrl()), "Landing page");
      },
    }),

    /** One landing page. forms.read. */
    get: defineAction({
      rest: `GET ${WS}/:landingPageId`,
      openapi: { tags, summary: "Get a landing page" },
      ...read,
      params: schemas.get,
      result: results.landingPage,
      handler: async (ctx) =>
        found(await repo.findPage(workspaceOf(ctx), ctx.params.landingPageId, publicUrl()), "Landing page"),
    }),

    /** Replace a landing page (PUT replaces all); publishing stamps `publishedAt`, a draft is no longer served. forms.write. */
    replace: defineAction({
      rest: `PUT ${WS}/:landingPageId`,
      openapi: { tags, summary: "Replace a landing page" },
      ...write,
      params: schemas.replace,
      result: results.landingPage,
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const { workspaceId: _path, landingPageId, ...input } = ctx.params;
        if (!(await repo.replacePage(ws, landingPageId, input))) throw notFound("Landing page");
        return found(await repo.findPage(ws, landingPageId, publicUrl()), "Landing page");
      },
    }),

    /** Delete a landing page. forms.write. */
    remove: defineAction({
      rest: `DELETE ${WS}/:landingPageId`,
      openapi: { tags, summary: "Delete a landing page" },
      ...write,
      params: schemas.get,
      result: results.removed,
      async handler(ctx) {
        if (!(await repo.deletePage(workspaceOf(ctx), ctx.params.landingPageId)))
          throw notFound("Landing page");
        return { success: true };
      },
    }),

    /**
     * A published page (a draft or unknown one: 404), sandboxed, its forms
     * drawn; each visit counted and recorded as `page_view` (a HEAD is no visit). Public.
     */
    serve: defineAction({
      auth: "public",
      params: schemas.serve,
      async handler(ctx) {
        // HEAD is safe: it is not a visit.
        const visit = ctx.meta.method !== "HEAD";
        const page = await repo.viewPublished(ctx.params.workspaceSlug, ctx.params.slug, visit);
        if (!page) {
          const text = "There is no page at this address.";
          return renderPage(ctx, "message", { title: "Not found", heading: "Not found", text }, 404);
        }
        const html = landingDocument(
          page.title,
          page.html,
          await formMarkup(ctx, page.workspaceId, page.html),
          landingPageToken(page.workspaceId, page.id),
        );
        if (visit && isServiceAvailable(ctx.broker, "events"))
          await systemCall(ctx, page.workspaceId, "events.record", {
            type: "page_view",
            metadata: { landingPageId: page.id, title: page.title },
            pageUrl: `${publicUrl()}/p/${ctx.params.workspaceSlug}/${ctx.params.slug}`,
            ...(ctx.meta.referrer ? { referrer: ctx.meta.referrer.slice(0, 2048) } : {}),
          });
        ctx.meta.$responseType = "text/html; charset=utf-8";
        ctx.meta.$responseHeaders = LANDING_PAGE_HEADERS;
        return html;
      },
    }),
  },
});
