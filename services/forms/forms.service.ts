import { requires } from "../../lib/access";
import { defineAction, defineService } from "../../lib/define-service";
import { fieldError, found, notFound, validationError } from "../../lib/errors";
import type { AppContext } from "../../lib/moleculer-types";
import { pageRequest } from "../../lib/pagination";
import { referenceIssue } from "../../lib/registry";
import { workspaceOf } from "../../lib/tenancy";
import { DatabaseMixin } from "../../mixins/database.mixin";
import { definitionIssues } from "./form-fields";
import * as repo from "./forms.repo";
import { retentionActions } from "../../lib/retention";
import { results, schemas, type FormSettings } from "./forms.schemas";
import { publicActions } from "./public.actions";
import { allowedOriginsOf, redirectAllowed } from "./submit";

const WS = "/workspaces/:workspaceId/forms";
const tags = ["Forms"];
const read = requires("forms.read");
const write = requires("forms.write");
/** Analytics look back this many days unless `from` says otherwise. */
const ANALYTICS_DAYS = 30;
const DAY_MS = 86_400_000;

const SETTINGS_DEFAULTS: FormSettings = {
  submitLabel: "Submit",
  successMessage: "Thank you.",
  doubleOptIn: false,
};

/** A definition as saved: its fields checked with their paths, its redirects kept to the workspace's origins. */
async function checkedInput(
  ctx: AppContext,
  input: Pick<repo.FormInput, "name" | "active" | "fields"> & { settings?: FormSettings },
): Promise<repo.FormInput> {
  const settings = { ...SETTINGS_DEFAULTS, ...input.settings };
  const issues = definitionIssues(input.fields);
  const allowedOrigins = await allowedOriginsOf(ctx, workspaceOf(ctx));
  for (const key of ["redirectUrl", "confirmRedirectUrl"] as const) {
    const url = settings[key];
    if (url && !redirectAllowed(url, allowedOrigins))
      issues.push({
        field: `settings.${key}`,
        message: "must be on this service's address or one of the workspace's allowedOrigins",
      });
  }
  if (settings.assetId) {
    const issue = await referenceIssue(ctx, "settings.assetId", "content.assetGet", {
      assetId: settings.assetId,
    });
    if (issue) issues.push(issue);
  }
  if (issues.length) throw validationError("The form is invalid", issues);
  return { name: input.name, active: input.active, fields: input.fields, settings };
}

/** UTC date `days` before today, as YYYY-MM-DD. */
const dayBefore = (days: number, from = new Date()) =>
  new Date(from.getTime() - days * DAY_MS).toISOString().slice(0, 10);

/** Forms (forms.* scopes): definitions, submissions and analytics; their public pages and submissions in public.actions.ts. */
export default defineService({
  name: "forms",
  mixins: [DatabaseMixin, publicActions],
  settings: { rest: "/" },

  actions: {
    // Internal (retention): countBefore and purgeBefore over the workspace's form submissions (lib/retention.ts).
    ...retentionActions(repo.countSubmissionsBefore, repo.deleteSubmissionsBefore),

    /** Forms, newest first; `search` (name), `active`, `sort`. forms.read. */
    list: defineAction({
      rest: `GET ${WS}`,
      openapi: { tags, summary: "List forms" },
      ...read,
      params: schemas.list,
      result: results.list,
      handler: (ctx) => {
        const { search, active, sort } = ctx.params;
        return repo.listForms(workspaceOf(ctx), pageRequest(ctx.params), { search, active, sort });
      },
    }),

    /** Create a form: typed fields mapped to contact fields or consent, settings. forms.write. */
    create: defineAction({
      rest: `POST ${WS}`,
      openapi: {
        tags,
        summary: "Create a form",
        description:
          "Each field's `mapTo` names a contact field (`email`, `firstName`, `customFields.<key>`, `attributes.<key>`) " +
          "or `consent.<channel>` (a `consent` field). Redirects must lead to this service or the workspace's `allowedOrigins`.",
      },
      ...write,
      params: schemas.create,
      status: 201,
      result: results.form,
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const id = await repo.insertForm(ws, await checkedInput(ctx, ctx.params));
        return found(await repo.findForm(ws, id), "Form");
      },
    }),

    /** One form. forms.read. */
    get: defineAction({
      rest: `GET ${WS}/:formId`,
      openapi: { tags, summary: "Get a form" },
      ...read,
      params: schemas.get,
      result: results.form,
      handler: async (ctx) => found(await repo.findForm(workspaceOf(ctx), ctx.params.formId), "Form"),
    }),

    /** Replace a form's whole definition (PUT replaces all). forms.write. */
    replace: defineAction({
      rest: `PUT ${WS}/:formId`,
      openapi: { tags, summary: "Replace a form" },
      ...write,
      params: schemas.replace,
      result: results.form,
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const { formId } = ctx.params;
        found(await repo.findForm(ws, formId), "Form");
        if (!(await repo.replaceForm(ws, formId, await checkedInput(ctx, ctx.params))))
          throw notFound("Form");
        return found(await repo.findForm(ws, formId), "Form");
      },
    }),

    /** Delete a form with its submissions and views. forms.write. */
    remove: defineAction({
      rest: `DELETE ${WS}/:formId`,
      openapi: { tags, summary: "Delete a form and its submissions" },
      ...write,
      params: schemas.get,
      result: results.removed,
      async handler(ctx) {
        if (!(await repo.deleteForm(workspaceOf(ctx), ctx.params.formId))) throw notFound("Form");
        return { success: true };
      },
    }),

    /** Views, submissions and conversion, by UTC day (`from`, `to`; default the last 30 days). forms.read. */
    analytics: defineAction({
      rest: `GET ${WS}/:formId/analytics`,
      openapi: { tags, summary: "Form views, submissions and conversion by day" },
      ...read,
      params: schemas.analytics,
      result: results.analytics,
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const { formId } = ctx.params;
        found(await repo.findForm(ws, formId), "Form");
        const to = ctx.params.to ?? dayBefore(0);
        const from = ctx.params.from ?? dayBefore(ANALYTICS_DAYS - 1, new Date(`${to}T00:00:00Z`));
        if (from > to) throw fieldError("from", "must not be after to");
        if (Date.parse(to) - Date.parse(from) > 366 * DAY_MS)
          throw fieldError("from", "must be within a year of to");
        const points = await repo.dailyCounts(ws, formId, from, to);
        const views = points.reduce((n, p) => n + p.views, 0);
        const submissions = points.reduce((n, p) => n + p.submissions, 0);
        return {
          views,
          submissions,
          conversionRate: views ? Math.round((submissions / views) * 10_000) / 10_000 : 0,
          points,
        };
      },
    }),

    /** Submissions, newest first, with proof of consent; `from`, `to`. forms.read. */
    submissions: defineAction({
      rest: `GET ${WS}/:formId/submissions`,
      openapi: { tags, summary: "List a form's submissions" },
      ...read,
      params: schemas.submissions,
      result: results.submissions,
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const { formId, from, to } = ctx.params;
        found(await repo.findForm(ws, formId), "Form");
        return repo.listSubmissions(ws, formId, pageRequest(ctx.params), { from, to });
      },
    }),
  },
});
