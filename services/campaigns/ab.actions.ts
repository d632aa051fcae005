import { requires } from "../../lib/access";
import { defineAction } from "../../lib/define-service";
import { conflict, fieldError, notFound } from "../../lib/errors";
import type { AppContext } from "../../lib/moleculer-types";
import { pageOf, pageRequest } from "../../lib/pagination";
import { systemCall } from "../../lib/system-call";
import { workspaceOf } from "../../lib/tenancy";
import * as ab from "./ab.repo";
import { splitsOf, splitTest, templateTest } from "./ab-tests";
import { results, schemas } from "./campaigns.schemas";
import { ACCESS, campaignOf, tags, WS } from "./campaigns.shared";
import * as versionsRepo from "./versions.repo";
import type { Workflow } from "./workflow";

const write = requires("templates.write");

/** Campaign and template A/B tests with their significance; mixed into `campaigns`. */

type TemplateAb = Parameters<typeof templateTest>[0];

/** The workflow a campaign's tests run in: its newest version, else its draft. */
async function testedWorkflow(campaign: { id: string; publishedVersion: number | null; workflow: Workflow }) {
  return campaign.publishedVersion
    ? ((await versionsRepo.versionWorkflow(campaign.id, campaign.publishedVersion)) ?? campaign.workflow)
    : campaign.workflow;
}

const templateTests = (ctx: AppContext) =>
  systemCall<TemplateAb[]>(ctx, workspaceOf(ctx), "templates.abList", {});

export const abActions = {
  actions: {
    /** The campaign's A/B splits: per variant enrolled, sent, opened, clicked, goals and rate, with the significance test. campaigns.read. */
    abTests: defineAction({
      rest: `GET ${WS}/:campaignId/ab-tests`,
      openapi: { tags, summary: "A campaign's A/B tests with their figures and significance" },
      ...ACCESS.read,
      params: schemas.get,
      result: results.campaignAbTests,
      async handler(ctx) {
        const campaign = await campaignOf(ctx, ctx.params.campaignId);
        const winners = await ab.winners(campaign.id);
        return Promise.all(
          splitsOf(await testedWorkflow(campaign)).map((node) => splitTest(campaign.id, node, winners)),
        );
      },
    }),

    /** Choose a split's winner by hand: later contacts all take it. campaigns.write. */
    abWinner: defineAction({
      rest: `POST ${WS}/:campaignId/ab-tests/:nodeId/winner`,
      openapi: { tags, summary: "Choose an A/B split's winner" },
      ...ACCESS.write,
      params: schemas.abWinner,
      result: results.campaignAbTest,
      async handler(ctx) {
        const { campaignId, nodeId, variant } = ctx.params;
        const campaign = await campaignOf(ctx, campaignId);
        const node = splitsOf(await testedWorkflow(campaign)).find((n) => n.id === nodeId);
        if (!node) throw notFound("A/B test");
        const variants = (node.config.variants as Array<{ id: string }>).map((v) => v.id);
        if (!variants.includes(variant)) throw fieldError("variant", `must be one of ${variants.join(", ")}`);
        await ab.setWinner(workspaceOf(ctx), campaign.id, nodeId, variant, "hand");
        return splitTest(campaign.id, node, await ab.winners(campaign.id));
      },
    }),

    /** Every A/B test of the workspace, campaigns' splits and templates' variants (filter `kind`). campaigns.read. */
    abTestsAll: defineAction({
      rest: "GET /workspaces/:workspaceId/abtests",
      openapi: { tags, summary: "All A/B tests across campaigns and templates" },
      ...ACCESS.read,
      params: schemas.abTests,
      result: results.abTests,
      async handler(ctx) {
        const { kind } = ctx.params;
        const all = [];
        if (kind !== "template")
          for (const campaign of await ab.campaignsWithSplits(workspaceOf(ctx))) {
            const winners = await ab.winners(campaign.id);
            for (const node of splitsOf(campaign.workflow)) {
              const test = await splitTest(campaign.id, node, winners);
              all.push({
                kind: "campaign" as const,
                campaignId: campaign.id,
                nodeId: node.id,
                templateId: null,
                metric: test.metric,
                status: test.status,
                winner: test.winner,
                variants: test.variants,
                significance: test.significance,
              });
            }
          }
        if (kind !== "campaign") all.push(...(await templateTests(ctx)).map(templateTest));
        const page = pageRequest(ctx.params);
        return pageOf(all.slice(page.offset, page.offset + page.limit), all.length, page);
      },
    }),

    /** Start a template's A/B test (= its `PUT ab`): 201, 409 when it has one. templates.write. */
    abTestCreate: defineAction({
      rest: "POST /workspaces/:workspaceId/abtests",
      openapi: { tags, summary: "Start a template's A/B test" },
      ...write,
      params: schemas.abTestCreate,
      status: 201,
      result: results.abTest,
      async handler(ctx) {
        const { workspaceId, templateId, variants, metric } = ctx.params;
        const current = await systemCall<{
          variants: unknown[];
        }>(ctx, workspaceOf(ctx), "templates.abGet", {
          workspaceId,
          templateId,
        });
        if (current.variants.length) throw conflict("The template already has an A/B test");
        const set = await systemCall<Omit<TemplateAb, "templateId">>(
          ctx,
          workspaceOf(ctx),
          "templates.abPut",
          {
            workspaceId,
            templateId,
            variants,
            ...(metric ? { metric } : {}),
          },
        );
        return templateTest({ templateId, ...set });
      },
    }),
  },
};
