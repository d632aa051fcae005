import { newId } from "../../lib/crypto";
import { defineAction, defineService } from "../../lib/define-service";
import { conflict, found, notFound } from "../../lib/errors";
import { isServiceAvailable } from "../../lib/registry";
import { pageRequest } from "../../lib/pagination";
import { systemCall } from "../../lib/system-call";
import { workspaceOf } from "../../lib/tenancy";
import { DatabaseMixin } from "../../mixins/database.mixin";
import { abActions } from "./ab.actions";
import { prepareContent } from "./authoring";
import type { SendTestResult } from "../messages/messages.schemas";
import { compose, type Renderable } from "./compose";
import type { Content } from "./render";
import { ACCESS, renderable, renderContext, tags, WS } from "./templates.shared";
import * as repo from "./templates.repo";
import { results, schemas } from "./templates.schemas";
import { translationActions } from "./translations.actions";
import { readRetry } from "../../lib/resilience";

const { read, write, remove } = ACCESS;

/** Templates: per-channel content in Liquid, translations, A/B variants, previews and test sends. */
export default defineService({
  name: "templates",
  mixins: [DatabaseMixin, translationActions, abActions],
  settings: { rest: "/" },

  actions: {
    /** Templates, newest first; filters `channel`, `tag`, `search` (name). templates.read. */
    list: defineAction({
      rest: `GET ${WS}`,
      openapi: { tags, summary: "List templates" },
      ...read,
      params: schemas.list,
      result: results.list,
      handler: (ctx) => {
        const { channel, tag, search } = ctx.params;
        return repo.listTemplates(workspaceOf(ctx), pageRequest(ctx.params), { channel, tag, search });
      },
    }),

    /** Create a template; every Liquid field is parsed and MJML compiled (400 TEMPLATE_ERROR). templates.write. */
    create: defineAction({
      rest: `POST ${WS}`,
      openapi: { tags, summary: "Create a template (Liquid checked, MJML compiled)" },
      ...write,
      params: schemas.create,
      status: 201,
      result: results.template,
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const { name, channel, content, tags: labels = [] } = ctx.params;
        const locale = ctx.params.locale ?? (await renderContext(ctx)).defaultLocale;
        const id = newId();
        await repo.insertTemplate(ws, id, {
          name,
          channel,
          locale,
          content: await prepareContent(channel, content),
          tags: labels,
        });
        return found(await repo.getTemplate(ws, id), "Template");
      },
    }),

    /** One template with the locales it is translated into. templates.read. */
    get: defineAction({
      rest: `GET ${WS}/:templateId`,
      openapi: { tags, summary: "Get a template" },
      ...read,
      params: schemas.get,
      result: results.template,
      handler: async (ctx) =>
        found(await repo.getTemplate(workspaceOf(ctx), ctx.params.templateId), "Template"),
    }),

    /** Rename, relabel, change the base locale or the content (merged key by key; the channel is fixed). templates.write. */
    update: defineAction({
      rest: `PATCH ${WS}/:templateId`,
      openapi: { tags, summary: "Update a template (content merges key by key)" },
      ...write,
      params: schemas.update,
      result: results.template,
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const { templateId, name, locale, content, tags: labels } = ctx.params;
        const current = found(await repo.getTemplate(ws, templateId), "Template");
        const merged = content
          ? await prepareContent(current.channel, { ...(current.content as Content), ...content })
          : undefined;
        await repo.updateTemplate(ws, templateId, { name, locale, content: merged, tags: labels });
        return found(await repo.getTemplate(ws, templateId), "Template");
      },
    }),

    /** Delete a template with its translations; 409 while a campaign (not archived) sends it. templates.delete. */
    remove: defineAction({
      rest: `DELETE ${WS}/:templateId`,
      openapi: { tags, summary: "Delete a template (not while a campaign sends it)" },
      ...remove,
      params: schemas.get,
      result: results.success,
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const { templateId } = ctx.params;
        if (isServiceAvailable(ctx.broker, "campaigns")) {
          const { campaigns } = await systemCall<{
            campaigns: string[];
          }>(ctx, ws, "campaigns.templateUse", { templateId });
          if (campaigns.length) throw conflict(`The template is in use by campaign ${campaigns.join(", ")}`);
        }
        if (!(await repo.deleteTemplate(ws, templateId))) throw notFound("Template");
        return { success: true as const };
      },
    }),

    /** Render a saved template for a contact (or a sample one), in a locale and variant. templates.read. */
    preview: defineAction({
      rest: `POST ${WS}/:templateId/preview`,
      openapi: { tags, summary: "Render a saved template for a contact or a sample" },
      ...read,
      params: schemas.preview,
      result: results.preview,
      async handler(ctx) {
        const { templateId, contactId, locale, variant, variables } = ctx.params;
        const template = await renderable(workspaceOf(ctx), templateId);
        const context = await renderContext(ctx, contactId, template);
        const composed = await compose(template, { ...context, locale, variant, variables });
        return { channel: template.channel, ...composed };
      },
    }),

    /** Render unsaved content (checked as a save would be) for a contact or a sample one. templates.read. */
    previewUnsaved: defineAction({
      rest: `POST ${WS}/preview`,
      openapi: { tags, summary: "Render unsaved content for a contact or a sample" },
      ...read,
      params: schemas.previewUnsaved,
      result: results.preview,
      async handler(ctx) {
        const { channel, content, contactId, locale, variables } = ctx.params;
        const template: Renderable = {
          id: null,
          channel,
          locale: locale ?? "",
          content: await prepareContent(channel, content),
          translations: {},
          ab: null,
        };
        const context = await renderContext(ctx, contactId, template);
        template.locale ||= context.defaultLocale;
        return { channel, ...(await compose(template, { ...context, variables })) };
      },
    }),

    /**
     * Send the rendered template now to up to five addresses through the
     * workspace's provider: `[TEST] ` subject, no checks, nothing recorded. templates.write.
     */
    sendTest: defineAction({
      rest: `POST ${WS}/:templateId/send-test`,
      openapi: { tags, summary: "Send a test to up to five addresses (unchecked, unrecorded)" },
      ...write,
      params: schemas.sendTest,
      result: results.sendTest,
      async handler(ctx) {
        const { templateId, to, contactId, locale, variant, variables } = ctx.params;
        const template = await renderable(workspaceOf(ctx), templateId);
        const context = await renderContext(ctx, contactId, template);
        const { content } = await compose(template, { ...context, locale, variant, variables });
        if (template.channel === "email") content.subject = `[TEST] ${String(content.subject ?? "")}`;
        return ctx.call("messages.sendTest", {
          channel: template.channel,
          to,
          content,
        }) as Promise<SendTestResult>;
      },
    }),

    /** Internal (messages): a template with its translations and A/B test, to render sends. */
    resolve: defineAction({
      params: schemas.resolve,
      result: results.resolve,
      retryPolicy: readRetry(),
      handler: async (ctx) =>
        found(await repo.resolveTemplate(workspaceOf(ctx), ctx.params.templateId), "Template"),
    }),
  },
});
