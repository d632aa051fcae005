import { defineAction } from "../../lib/define-service";
import { fieldError, found, notFound } from "../../lib/errors";
import type { AppContext } from "../../lib/moleculer-types";
import { systemCall } from "../../lib/system-call";
import { workspaceOf } from "../../lib/tenancy";
import { preparePartial } from "./authoring";
import type { Content } from "./render";
import * as repo from "./templates.repo";
import type { AbState } from "./templates.repo";
import { results, schemas, type AbView } from "./templates.schemas";
import { ACCESS, messagesAvailable, tags, WS } from "./templates.shared";

const { read, write } = ACCESS;

type VariantCounts = Array<{ variant: string; sent: number; opened: number; clicked: number }>;

/** The test as answered: its variants and each one's figures from the messages it sent. */
async function abView(ctx: AppContext, templateId: string, ab: AbState | null): Promise<AbView> {
  if (!ab) return { variants: [], metric: "open", winner: null, stats: [] };
  const counts: VariantCounts = messagesAvailable(ctx)
    ? await systemCall<VariantCounts>(ctx, workspaceOf(ctx), "messages.variantStats", { templateId })
    : [];
  const stats = ab.variants.map((v) => {
    const c = counts.find((x) => x.variant === v.id) ?? { sent: 0, opened: 0, clicked: 0 };
    const hits = ab.metric === "click" ? c.clicked : c.opened;
    return { id: v.id, sent: c.sent, opened: c.opened, clicked: c.clicked, rate: c.sent ? hits / c.sent : 0 };
  });
  return { variants: ab.variants, metric: ab.metric, winner: ab.winner, stats };
}

/** The templates service's A/B test (mixed into `templates`). */
export const abActions = {
  actions: {
    /** The template's A/B test with per-variant sent, opened, clicked and rate. templates.read. */
    abGet: defineAction({
      rest: `GET ${WS}/:templateId/ab`,
      openapi: { tags, summary: "A template's A/B test and its figures" },
      ...read,
      params: schemas.get,
      result: results.ab,
      async handler(ctx) {
        const ab = await repo.getAb(workspaceOf(ctx), ctx.params.templateId);
        if (ab === undefined) throw notFound("Template");
        return abView(ctx, ctx.params.templateId, ab);
      },
    }),

    /**
     * Set the variants: 2-5 ids A..E, integer weights summing 100, each a
     * partial content over the base; `[]` removes the test. A contact keeps
     * its variant while the weights stay. templates.write.
     */
    abPut: defineAction({
      rest: `PUT ${WS}/:templateId/ab`,
      openapi: { tags, summary: "Set (or remove) a template's A/B variants" },
      ...write,
      params: schemas.abPut,
      result: results.ab,
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const { templateId, variants, metric = "open" } = ctx.params;
        const template = found(await repo.getTemplate(ws, templateId), "Template");
        if (!variants.length) {
          await repo.setAb(ws, templateId, null);
          return abView(ctx, templateId, null);
        }
        if (variants.length < 2)
          throw fieldError("variants", "must hold 2 to 5 variants, or none to remove the test");
        const ids: string[] = variants.map((v) => v.id);
        if (new Set(ids).size !== ids.length) throw fieldError("variants", "must not repeat a variant id");
        const expected = ["A", "B", "C", "D", "E"].slice(0, ids.length);
        if ([...ids].sort().join() !== expected.join())
          throw fieldError("variants", `must be ${expected.join(", ")} for ${ids.length} variants`);
        if (variants.reduce((sum, v) => sum + v.weight, 0) !== 100)
          throw fieldError("variants", "weights must sum to 100");
        const prepared = [];
        for (const [i, v] of variants.entries()) {
          const content = await preparePartial(
            template.channel,
            template.content as Content,
            v.content ?? {},
            `variants[${i}].content`,
          );
          prepared.push({ id: v.id, weight: v.weight, content });
        }
        const current = await repo.getAb(ws, templateId);
        const winner = current?.winner && ids.includes(current.winner) ? current.winner : null;
        const ab: AbState = { variants: prepared, metric, winner };
        await repo.setAb(ws, templateId, ab);
        return abView(ctx, templateId, ab);
      },
    }),

    /** Internal (`{ws}/abtests`): every template's A/B test with its figures. */
    abList: defineAction({
      params: schemas.abList,
      result: results.abList,
      async handler(ctx) {
        const tests = await repo.listAbs(workspaceOf(ctx));
        return Promise.all(
          tests.map(async ({ templateId, ab }) => ({ templateId, ...(await abView(ctx, templateId, ab)) })),
        );
      },
    }),

    /** Fix the winning variant: later sends all take it. templates.write. */
    abWinner: defineAction({
      rest: `POST ${WS}/:templateId/ab/winner`,
      openapi: { tags, summary: "Choose the winning variant" },
      ...write,
      params: schemas.abWinner,
      result: results.ab,
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const { templateId, variant } = ctx.params;
        const ab = await repo.getAb(ws, templateId);
        if (ab === undefined) throw notFound("Template");
        if (!ab) throw fieldError("variant", "the template has no A/B test");
        if (!ab.variants.some((v) => v.id === variant))
          throw fieldError("variant", "is not one of the test's variants");
        const chosen = { ...ab, winner: variant };
        await repo.setAb(ws, templateId, chosen);
        return abView(ctx, templateId, chosen);
      },
    }),
  },
};
