import { defineAction } from "../../lib/define-service";
import { conflict, fieldError, found, notFound } from "../../lib/errors";
import { workspaceOf } from "../../lib/tenancy";
import { preparePartial } from "./authoring";
import { translateContent, type TranslationSettings } from "./machine-translation";
import type { Content } from "./render";
import * as repo from "./templates.repo";
import { results, schemas } from "./templates.schemas";
import { ACCESS, tags, WS } from "./templates.shared";
import { openedSetting } from "../workspaces/for-use";

const { read, write } = ACCESS;

/** The templates service's translations (mixed into `templates`): partial content per locale, and machine translation. */
export const translationActions = {
  actions: {
    /** A template's translations by locale (a bare array). templates.read. */
    translationsList: defineAction({
      rest: `GET ${WS}/:templateId/translations`,
      openapi: { tags, summary: "List a template's translations" },
      ...read,
      params: schemas.get,
      result: results.translations,
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        found(await repo.getTemplate(ws, ctx.params.templateId), "Template");
        return repo.listTranslations(ws, ctx.params.templateId);
      },
    }),

    /** Add a translation: partial content over the base (409 when the locale has one). templates.write. */
    translationCreate: defineAction({
      rest: `POST ${WS}/:templateId/translations`,
      openapi: { tags, summary: "Add a translation (partial content over the base)" },
      ...write,
      params: schemas.translationCreate,
      status: 201,
      result: results.translation,
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const { templateId, locale, content } = ctx.params;
        const template = found(await repo.getTemplate(ws, templateId), "Template");
        if (locale.toLowerCase() === template.locale.toLowerCase())
          throw fieldError("locale", "is the template's base locale; change the template itself");
        const partial = await preparePartial(template.channel, template.content as Content, content);
        if (!(await repo.insertTranslation(ws, templateId, locale, partial)))
          throw conflict(`The template already has a ${locale} translation`);
        return found(await repo.getTranslation(ws, templateId, locale), "Translation");
      },
    }),

    /** One translation. templates.read. */
    translationGet: defineAction({
      rest: `GET ${WS}/:templateId/translations/:locale`,
      openapi: { tags, summary: "Get a translation" },
      ...read,
      params: schemas.translationGet,
      result: results.translation,
      handler: async (ctx) =>
        found(
          await repo.getTranslation(workspaceOf(ctx), ctx.params.templateId, ctx.params.locale),
          "Translation",
        ),
    }),

    /** Change a translation: its content merges key by key. templates.write. */
    translationUpdate: defineAction({
      rest: `PATCH ${WS}/:templateId/translations/:locale`,
      openapi: { tags, summary: "Update a translation (content merges key by key)" },
      ...write,
      params: schemas.translationUpdate,
      result: results.translation,
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const { templateId, locale, content } = ctx.params;
        const template = found(await repo.getTemplate(ws, templateId), "Template");
        const current = found(await repo.getTranslation(ws, templateId, locale), "Translation");
        const merged = { ...current.content, ...content };
        const partial = await preparePartial(template.channel, template.content as Content, merged);
        await repo.updateTranslation(ws, templateId, locale, partial);
        return found(await repo.getTranslation(ws, templateId, locale), "Translation");
      },
    }),

    /** Remove a translation. templates.write. */
    translationRemove: defineAction({
      rest: `DELETE ${WS}/:templateId/translations/:locale`,
      openapi: { tags, summary: "Delete a translation" },
      ...write,
      params: schemas.translationGet,
      result: results.success,
      async handler(ctx) {
        const { templateId, locale } = ctx.params;
        if (!(await repo.deleteTranslation(workspaceOf(ctx), templateId, locale)))
          throw notFound("Translation");
        return { success: true as const };
      },
    }),

    /**
     * Machine-translate the template into `targetLocales` through the
     * LibreTranslate-compatible API of `settings.translation` (400 naming the
     * setting when unset); existing translations stay unless `overwrite`. templates.write.
     */
    translate: defineAction({
      rest: `POST ${WS}/:templateId/translate`,
      openapi: { tags, summary: "Machine-translate into other locales (settings.translation)" },
      ...write,
      params: schemas.translate,
      result: results.translate,
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const { templateId, targetLocales, overwrite } = ctx.params;
        const template = found(await repo.getTemplate(ws, templateId), "Template");
        // Opened in this process: the API key never crosses the broker.
        const settings = (await openedSetting(ws, "translation")) as Partial<TranslationSettings> | null;
        if (!settings?.baseUrl)
          throw fieldError(
            "settings.translation",
            "is not set: add {baseUrl, apiKey} of a LibreTranslate-compatible API to the workspace settings",
          );
        const existing = new Set(
          (await repo.listTranslations(ws, templateId)).map((t) => t.locale.toLowerCase()),
        );
        const targets = [...new Set(targetLocales)].filter(
          (l) =>
            l.toLowerCase() !== template.locale.toLowerCase() &&
            (overwrite || !existing.has(l.toLowerCase())),
        );
        for (const locale of targets) {
          const translated = await translateContent(
            { baseUrl: settings.baseUrl, apiKey: settings.apiKey ?? null },
            template.channel,
            template.content as Content,
            template.locale,
            locale,
          );
          const partial = await preparePartial(template.channel, template.content as Content, translated);
          await repo.upsertTranslation(ws, templateId, locale, partial);
        }
        const all = await repo.listTranslations(ws, templateId);
        const wanted = new Set(targets.map((l) => l.toLowerCase()));
        return { translations: all.filter((t) => wanted.has(t.locale.toLowerCase())) };
      },
    }),
  },
};
