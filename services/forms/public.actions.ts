import fs from "node:fs";
import path from "node:path";
import { defineAction, defineMixin, type ServiceThis } from "../../lib/define-service";
import { notFound, type ErrorData, type FieldIssue } from "../../lib/errors";
import type { AppContext } from "../../lib/moleculer-types";
import { prefersHtml, renderPage, renderPartial } from "../../lib/pages";
import { PUBLIC_DIR } from "../../lib/paths";
import { RefusedOrigins } from "../../lib/refused-origins";
import { systemCall } from "../../lib/system-call";
import { workspaceOf } from "../../lib/tenancy";
import * as repo from "./forms.repo";
import { results, schemas, type FormView } from "./forms.schemas";
import { prefillOf } from "./form-fields";
import { originAllowed, redirectAllowed, submitForm } from "./submit";

/**
 * A form's public side (contract 10), mixed into `forms`: the hosted page
 * `/f/{formId}`, the embed script, and submissions, which work with
 * JavaScript (fetch, JSON answers) and without it (a plain form post,
 * answered with a page or a 303 redirect).
 */

const tags = ["Forms"];

/** A plain form post from a page (not fetch asking for JSON): answered with pages and redirects. */
const isPagePost = (ctx: AppContext) =>
  (ctx.meta.contentType ?? "").startsWith("application/x-www-form-urlencoded") &&
  (!ctx.meta.accept || ctx.meta.accept.includes("*/*") || prefersHtml(ctx.meta.accept)) &&
  !(ctx.meta.accept ?? "").startsWith("application/json");

/** The hosted page, again with what the visitor typed and what was wrong (a form post refused). */
function formPage(
  ctx: AppContext,
  form: repo.PublicForm,
  status: number,
  values: Record<string, unknown> = {},
  issues: FieldIssue[] = [],
) {
  const errors = Object.fromEntries(issues.map((i) => [i.field, i.message]));
  const unplaced = issues.filter((i) => !form.fields.some((f) => f.key === i.field));
  return renderPage(
    ctx,
    "form",
    {
      title: form.name,
      name: form.name,
      form,
      action: `/api/forms/${encodeURIComponent(form.id)}/submit`,
      values,
      errors,
      formError: unplaced.map((i) => `${i.field} ${i.message}`).join(" "),
    },
    status,
  );
}

/** A blank form's markup, posting to this service's submit route. */
const formMarkup = (form: FormView) =>
  renderPartial("form-body", {
    form,
    action: `/api/forms/${encodeURIComponent(form.id)}/submit`,
    values: {},
    errors: {},
    formError: "",
  });

const messagePage = (ctx: AppContext, status: number, heading: string, text: string) =>
  renderPage(ctx, "message", { title: heading, heading, text }, status);

/** What the public actions add to the forms service's `this`. */
export interface PublicFormsState {
  /** Submissions from origins a workspace does not allow, noted in batches. */
  refusedOrigins: RefusedOrigins;
}

export const publicActions = defineMixin<ServiceThis<PublicFormsState>>({
  actions: {
    /** Submit a form (JSON or form-encoded). Public. */
    submit: defineAction({
      rest: "POST /forms/:formId/submit",
      auth: "public",
      openapi: {
        tags,
        summary: "Submit a form (JSON, or a form post from a page)",
        description:
          "Finds the contact by email or creates it (blank answers never empty a known field), stores the submission " +
          "with proof of consent and records `form.submitted`. A form post (form-encoded, not asking for JSON) is " +
          "answered with a 303 to the form's `redirectUrl` or a page. `_hp` is a honeypot; ten submissions a minute " +
          "per address and form.",
        responses: {
          "201": {
            description: "Submitted (JSON), or the thank-you page (a form post)",
            content: {
              "application/json": { schema: results.submitted },
              "text/html": { schema: { type: "string" } },
            },
          },
          "303": { description: "A form post: to the form's redirectUrl" },
          "4XX": { $ref: "#/components/responses/Error" },
        },
      },
      params: schemas.submit,
      async handler(this: ServiceThis<PublicFormsState>, ctx) {
        const { formId, ...body } = ctx.params;
        const asPage = isPagePost(ctx);
        const form = await repo.findPublicForm(formId);
        if (!form) {
          if (asPage) return messagePage(ctx, 404, "Form not found", "This form does not exist.");
          throw notFound("Form");
        }
        const origin = ctx.meta.origin ?? null;
        if (origin && originAllowed(origin, form.allowedOrigins))
          ctx.meta.$responseHeaders = { "Access-Control-Allow-Origin": origin, Vary: "Origin" };
        else if (origin) this.refusedOrigins.note(form.workspaceId, origin);
        try {
          const visitor = { ip: ctx.meta.ip ?? null, userAgent: ctx.meta.userAgent ?? null, origin };
          const answer = await submitForm(ctx.broker, form, body, visitor);
          ctx.meta.$statusCode = 201;
          if (!asPage) return answer;
          if (answer.redirectUrl) {
            ctx.meta.$statusCode = 303;
            ctx.meta.$location = answer.redirectUrl;
            return null;
          }
          return messagePage(ctx, 201, "Thank you", answer.message);
        } catch (err) {
          if (!asPage) throw err;
          const { code, message, data } = err as { code?: number; message: string; data?: ErrorData };
          if (code === 400 && data?.details) return formPage(ctx, form, 400, body, data.details);
          if (code === 429 && data?.retryAfter)
            ctx.meta.$responseHeaders = {
              ...ctx.meta.$responseHeaders,
              "Retry-After": String(data.retryAfter),
            };
          if (code && code >= 400 && code < 500) return messagePage(ctx, code, "Not sent", message);
          throw err;
        }
      },
    }),

    /** The hosted page of a form (a view counted); inactive or unknown: a page saying so. Public. */
    page: defineAction({
      auth: "public",
      params: schemas.page,
      async handler(ctx) {
        const form = await repo.findPublicForm(ctx.params.formId);
        if (!form) return messagePage(ctx, 404, "Form not found", "This form does not exist.");
        if (!form.active) return messagePage(ctx, 403, form.name, "This form is not accepting submissions.");
        await repo.countView(form.id);
        return formPage(ctx, form, 200);
      },
    }),

    /** JavaScript that draws the form where its script tag stands and submits it with fetch (a view counted). Public. */
    embed: defineAction({
      rest: "GET /forms/:formId/embed",
      auth: "public",
      openapi: {
        tags,
        summary: "The form's embed script",
        responses: {
          "200": {
            description: "JavaScript",
            content: { "text/javascript": { schema: { type: "string" } } },
          },
          "4XX": { $ref: "#/components/responses/Error" },
        },
      },
      params: schemas.page,
      async handler(ctx) {
        const form = await repo.findPublicForm(ctx.params.formId);
        if (!form || !form.active) throw notFound("Form");
        await repo.countView(form.id);
        const markup = await formMarkup(form);
        ctx.meta.$responseType = "text/javascript; charset=utf-8";
        ctx.meta.$responseHeaders = { "Cache-Control": "no-cache" };
        return embedScript(markup);
      },
    }),

    /** Internal: the markup of the workspace's active forms among `formIds` (a landing page draws them). */
    markup: defineAction({
      params: schemas.markup,
      result: results.markup,
      async handler(ctx) {
        const forms = await repo.activeFormsNamed(workspaceOf(ctx), ctx.params.formIds);
        return Object.fromEntries(
          await Promise.all(forms.map(async (form) => [form.id, await formMarkup(form)])),
        );
      },
    }),

    /** Internal (the website script): the workspace's active forms. */
    active: defineAction({
      params: schemas.active,
      result: results.active,
      handler: (ctx) => repo.activeForms(workspaceOf(ctx)),
    }),

    /** Internal (the website script): a form's fields an identified visitor's contact already fills, by key. */
    prefill: defineAction({
      params: schemas.prefill,
      result: results.prefill,
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const form = await repo.findForm(ws, ctx.params.formId);
        if (!form?.active) throw notFound("Form");
        const contact = await systemCall<Record<string, unknown>>(ctx, ws, "contacts.get", {
          workspaceId: ws,
          contactId: ctx.params.contactId,
        });
        return { fields: prefillOf(form.fields, contact) };
      },
    }),

    /** Internal: where a confirm link of this form's double opt-in leads (null: the workspace's page). */
    confirmRedirect: defineAction({
      params: schemas.confirmRedirect,
      result: results.confirmRedirect,
      async handler(ctx) {
        const form = await repo.findPublicForm(ctx.params.formId);
        const url = form?.settings.confirmRedirectUrl;
        if (!form || !url || form.workspaceId !== ctx.meta.workspaceId) return null;
        return redirectAllowed(url, form.allowedOrigins) ? url : null;
      },
    }),
  },

  created() {
    this.refusedOrigins = new RefusedOrigins(this.broker);
  },

  stopped() {
    return this.refusedOrigins.flush();
  },
});

/** The form's markup, put before the script tag that loaded it, posting to the service the script came from. */
function embedScript(markup: string): string {
  return `${FORM_SCRIPT}
(function () {
  var script = document.currentScript;
  var base = new URL(script.src).origin;
  var box = document.createElement("div");
  box.className = "cms-form-embed";
  box.innerHTML = ${JSON.stringify(markup).replace(/</g, "\\u003c")};
  var form = box.querySelector("form");
  form.action = base + form.getAttribute("action");
  // The forms' look (scoped to .cms-form), once per page.
  if (!document.querySelector("link[data-cms-form-style]")) {
    var style = document.createElement("link");
    style.rel = "stylesheet";
    style.href = base + "/form.css";
    style.setAttribute("data-cms-form-style", "");
    document.head.appendChild(style);
  }
  script.parentNode.insertBefore(box, script);
  window.cmsForms.enhance(form);
})();
`;
}

/** public/form.js, read once: the same enhancement the hosted page loads. */
const FORM_SCRIPT = fs.readFileSync(path.join(PUBLIC_DIR, "form.js"), "utf8");
