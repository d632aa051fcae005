import { newId } from "../../lib/crypto";
import { defineAction } from "../../lib/define-service";
import { conflict, fieldError, found, notFound, validationError } from "../../lib/errors";
import type { AppContext } from "../../lib/moleculer-types";
import { workspaceOf } from "../../lib/tenancy";
import * as repo from "./campaigns.repo";
import * as triggersRepo from "./triggers.repo";
import { results, schemas } from "./campaigns.schemas";
import {
  ACCESS,
  assertEditable,
  assertWorkflow,
  segmentOf,
  tags,
  workflowCampaignOf,
  WS,
} from "./campaigns.shared";
import { triggerConfigIssues } from "./triggers";
import { actionsOf, insertAction, NODE_ID, pathEnd, removeAction, type NodeType } from "./workflow";

const { read, write } = ACCESS;

/** A trigger's config problems as a 400, the segment a segment trigger watches included. */
async function assertTriggerConfig(
  ctx: AppContext,
  type: Parameters<typeof triggerConfigIssues>[0],
  config: Record<string, unknown>,
) {
  const issues = triggerConfigIssues(type, config);
  if (issues.length)
    throw validationError(`Invalid trigger: ${issues[0].field} ${issues[0].message}`, issues);
  if (type !== "segment_entered" && type !== "segment_exited") return;
  if (!(await segmentOf(ctx, config.segmentId)))
    throw fieldError("config.segmentId", `names no segment (${String(config.segmentId)})`);
}

/** The draft's nodes as a list (`actions`) and the campaign's triggers; mixed into `campaigns`. */
export const flowActions = {
  actions: {
    /** The draft's nodes but the entry, each with where it leads. campaigns.read. */
    actionsList: defineAction({
      rest: `GET ${WS}/:campaignId/actions`,
      openapi: { tags, summary: "List the draft workflow's nodes" },
      ...read,
      params: schemas.get,
      result: results.actions,
      handler: async (ctx) => actionsOf((await workflowCampaignOf(ctx, ctx.params.campaignId)).workflow),
    }),

    /**
     * Add a node after `after` (default: the end of the main path), on
     * `branch` when that node branches; the whole workflow is validated as a
     * PUT would be. campaigns.write.
     */
    actionCreate: defineAction({
      rest: `POST ${WS}/:campaignId/actions`,
      openapi: { tags, summary: "Add a node to the draft workflow" },
      ...write,
      params: schemas.actionCreate,
      status: 201,
      result: results.action,
      async handler(ctx) {
        const { campaignId, type, config, branch } = ctx.params;
        const campaign = await workflowCampaignOf(ctx, campaignId);
        assertEditable(campaign);
        const workflow = campaign.workflow;
        const id = ctx.params.id ?? newId().slice(0, 8);
        if (!NODE_ID.test(id)) throw fieldError("id", "must be 1 to 64 letters, digits, _ or -");
        if (workflow.nodes.some((n) => n.id === id)) throw conflict(`The workflow already has a node ${id}`);
        const after = ctx.params.after ?? pathEnd(workflow);
        if (!workflow.nodes.some((n) => n.id === after))
          throw fieldError("after", `names no node (${after})`);
        const next = await assertWorkflow(
          ctx,
          insertAction(workflow, { id, type: type as NodeType, config }, after, branch ?? null),
        );
        await repo.updateCampaign(workspaceOf(ctx), campaignId, { workflow: next });
        return actionsOf(next).find((a) => a.id === id)!;
      },
    }),

    /** Replace a node's config, validated with the whole workflow. campaigns.write. */
    actionUpdate: defineAction({
      rest: `PATCH ${WS}/:campaignId/actions/:actionId`,
      openapi: { tags, summary: "Change a node's config" },
      ...write,
      params: schemas.actionUpdate,
      result: results.action,
      async handler(ctx) {
        const { campaignId, actionId, config } = ctx.params;
        const campaign = await workflowCampaignOf(ctx, campaignId);
        assertEditable(campaign);
        const { workflow } = campaign;
        if (!workflow.nodes.some((n) => n.id === actionId && n.type !== "entry")) throw notFound("Action");
        const next = await assertWorkflow(ctx, {
          ...workflow,
          nodes: workflow.nodes.map((n) => (n.id === actionId ? { ...n, config } : n)),
        });
        await repo.updateCampaign(workspaceOf(ctx), campaignId, { workflow: next });
        return actionsOf(next).find((a) => a.id === actionId)!;
      },
    }),

    /** Remove a node, joining its predecessors to what followed it. campaigns.write. */
    actionRemove: defineAction({
      rest: `DELETE ${WS}/:campaignId/actions/:actionId`,
      openapi: { tags, summary: "Remove a node (its predecessor joins its successor)" },
      ...write,
      params: schemas.actionRemove,
      result: results.success,
      async handler(ctx) {
        const { campaignId, actionId } = ctx.params;
        const campaign = await workflowCampaignOf(ctx, campaignId);
        assertEditable(campaign);
        if (!campaign.workflow.nodes.some((n) => n.id === actionId && n.type !== "entry"))
          throw notFound("Action");
        const next = await assertWorkflow(ctx, removeAction(campaign.workflow, actionId));
        await repo.updateCampaign(workspaceOf(ctx), campaignId, { workflow: next });
        return { success: true as const };
      },
    }),

    /** The campaign's triggers (live: they enroll while the campaign is active). campaigns.read. */
    triggersList: defineAction({
      rest: `GET ${WS}/:campaignId/triggers`,
      openapi: { tags, summary: "List triggers" },
      ...read,
      params: schemas.get,
      result: results.triggers,
      handler: async (ctx) => (await workflowCampaignOf(ctx, ctx.params.campaignId)).triggers,
    }),

    /** Add a trigger; `cooldown` re-entry needs `cooldownHours`. campaigns.write. */
    triggerCreate: defineAction({
      rest: `POST ${WS}/:campaignId/triggers`,
      openapi: { tags, summary: "Add a trigger" },
      ...write,
      params: schemas.triggerCreate,
      status: 201,
      result: results.trigger,
      async handler(ctx) {
        const { campaignId, type, config = {}, reentry = "once", cooldownHours, active = true } = ctx.params;
        const campaign = await workflowCampaignOf(ctx, campaignId);
        assertEditable(campaign);
        await assertTriggerConfig(ctx, type, config);
        if (reentry === "cooldown" && !cooldownHours)
          throw fieldError("cooldownHours", "is required for cooldown re-entry");
        const id = newId();
        const ws = workspaceOf(ctx);
        await triggersRepo.insertTrigger(ws, campaignId, id, {
          type,
          config,
          reentry,
          cooldownHours: cooldownHours ?? null,
          active,
        });
        return found(await triggersRepo.getTrigger(ws, campaignId, id), "Trigger");
      },
    }),

    /** Change a trigger (fields merge; the type is fixed). campaigns.write. */
    triggerUpdate: defineAction({
      rest: `PATCH ${WS}/:campaignId/triggers/:triggerId`,
      openapi: { tags, summary: "Change a trigger" },
      ...write,
      params: schemas.triggerUpdate,
      result: results.trigger,
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const { campaignId, triggerId } = ctx.params;
        assertEditable(await workflowCampaignOf(ctx, campaignId));
        const current = found(await triggersRepo.getTrigger(ws, campaignId, triggerId), "Trigger");
        const merged = {
          type: current.type,
          config: ctx.params.config ?? current.config,
          reentry: ctx.params.reentry ?? current.reentry,
          cooldownHours:
            ctx.params.cooldownHours === undefined ? current.cooldownHours : ctx.params.cooldownHours,
          active: ctx.params.active ?? current.active,
        };
        await assertTriggerConfig(ctx, merged.type, merged.config);
        if (merged.reentry === "cooldown" && !merged.cooldownHours)
          throw fieldError("cooldownHours", "is required for cooldown re-entry");
        await triggersRepo.updateTrigger(ws, campaignId, triggerId, merged);
        return found(await triggersRepo.getTrigger(ws, campaignId, triggerId), "Trigger");
      },
    }),

    /** Remove a trigger. campaigns.write. */
    triggerRemove: defineAction({
      rest: `DELETE ${WS}/:campaignId/triggers/:triggerId`,
      openapi: { tags, summary: "Remove a trigger" },
      ...write,
      params: schemas.triggerRemove,
      result: results.success,
      async handler(ctx) {
        const { campaignId, triggerId } = ctx.params;
        assertEditable(await workflowCampaignOf(ctx, campaignId));
        if (!(await triggersRepo.deleteTrigger(workspaceOf(ctx), campaignId, triggerId)))
          throw notFound("Trigger");
        return { success: true as const };
      },
    }),
  },
};
