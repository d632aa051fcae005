import { newId } from "../../lib/crypto";
import { defineAction, defineService } from "../../lib/define-service";
import { found, invalidState, notFound } from "../../lib/errors";
import type { AppContext } from "../../lib/moleculer-types";
import { pageRequest } from "../../lib/pagination";
import { workspaceOf } from "../../lib/tenancy";
import { DatabaseMixin } from "../../mixins/database.mixin";
import { BackgroundMixin } from "../../mixins/background";
import * as repo from "./campaigns.repo";
import * as versionsRepo from "./versions.repo";
import * as enrollmentsRepo from "./enrollments.repo";
import { results, schemas, type CampaignStatus } from "./campaigns.schemas";
import {
  ACCESS,
  assertEditable,
  assertWorkflow,
  campaignOf,
  tags,
  workflowCampaignOf,
  workflowIssues,
  WS,
} from "./campaigns.shared";
import { abActions } from "./ab.actions";
import { backgroundWork } from "./background";
import type { CampaignsService, MovedCampaign } from "./campaigns.this";
import { broadcastActions } from "./broadcasts.actions";
import { enrollmentActions } from "./enrollments.actions";
import { flowActions } from "./flow.actions";
import { transitionProblem } from "./lifecycle";
import { emptyWorkflow } from "./workflow";

const { read, write, remove } = ACCESS;

/** Campaigns: workflows with versions, triggers, enrollments that advance durably, their logs, and broadcasts. */
export default defineService<CampaignsService>({
  name: "campaigns",
  mixins: [
    DatabaseMixin,
    flowActions,
    enrollmentActions,
    broadcastActions,
    abActions,
    backgroundWork,
    BackgroundMixin,
  ],
  settings: { rest: "/" },

  actions: {
    /** Campaigns, newest first; filters `status`, `type`, `search` (name). campaigns.read. */
    list: defineAction({
      rest: `GET ${WS}`,
      openapi: { tags, summary: "List campaigns with their enrollment counts" },
      ...read,
      params: schemas.list,
      result: results.list,
      handler: (ctx) => {
        const { status, type, search } = ctx.params;
        return repo.listCampaigns(workspaceOf(ctx), pageRequest(ctx.params), { status, type, search });
      },
    }),

    /** A draft workflow campaign (an entry node, unless a valid workflow is given). campaigns.write. */
    create: defineAction({
      rest: `POST ${WS}`,
      openapi: { tags, summary: "Create a draft campaign" },
      ...write,
      params: schemas.create,
      status: 201,
      result: results.detail,
      async handler(ctx) {
        const workflow = ctx.params.workflow
          ? await assertWorkflow(ctx, ctx.params.workflow)
          : emptyWorkflow();
        const id = newId();
        await repo.insertCampaign(workspaceOf(ctx), {
          id,
          name: ctx.params.name,
          type: "workflow",
          workflow,
          priority: ctx.params.priority ?? 0,
        });
        return campaignOf(ctx, id);
      },
    }),

    /** One campaign with its draft workflow and triggers. campaigns.read. */
    get: defineAction({
      rest: `GET ${WS}/:campaignId`,
      openapi: { tags, summary: "Get a campaign with its draft workflow and triggers" },
      ...read,
      params: schemas.get,
      result: results.detail,
      handler: (ctx) => campaignOf(ctx, ctx.params.campaignId),
    }),

    /**
     * Rename, reprioritise, reschedule, or move through the lifecycle (409
     * INVALID_STATE for a move the contract does not list). campaigns.write.
     */
    update: defineAction({
      rest: `PATCH ${WS}/:campaignId`,
      openapi: { tags, summary: "Update a campaign or change its status" },
      ...write,
      params: schemas.update,
      result: results.detail,
      async handler(this: CampaignsService, ctx) {
        const { campaignId, name, priority, scheduledAt, status } = ctx.params;
        const campaign = await campaignOf(ctx, campaignId);
        assertEditable(campaign);
        const at = scheduledAt === undefined ? campaign.scheduledAt : scheduledAt;
        const move = status && status !== campaign.status ? status : null;
        // A refused move changes nothing, the other fields included.
        const problem =
          move && transitionProblem(campaign.status, move, at ? new Date(at) : null, new Date());
        if (problem) throw invalidState(problem);
        if (move) await this.moveTo(ctx, campaign, move, at ? new Date(at) : null);
        await repo.updateCampaign(workspaceOf(ctx), campaignId, { name, priority, scheduledAt });
        return campaignOf(ctx, campaignId);
      },
    }),

    /** Delete a campaign with its versions, enrollments and logs; 409 while it is active. campaigns.delete. */
    remove: defineAction({
      rest: `DELETE ${WS}/:campaignId`,
      openapi: { tags, summary: "Delete a campaign (not while active)" },
      ...remove,
      params: schemas.get,
      result: results.success,
      async handler(ctx) {
        const campaign = await campaignOf(ctx, ctx.params.campaignId);
        if (campaign.status === "active")
          throw invalidState("Pause or complete the campaign before deleting it");
        if (!(await repo.deleteCampaign(workspaceOf(ctx), campaign.id))) throw notFound("Campaign");
        return { success: true as const };
      },
    }),

    /** Start it now (= PATCH status active): publishes the draft first when it has no version. campaigns.write. */
    execute: defineAction({
      rest: `POST ${WS}/:campaignId/execute`,
      openapi: { tags, summary: "Activate a campaign (publishing its draft when it has no version)" },
      ...write,
      params: schemas.get,
      result: results.detail,
      async handler(this: CampaignsService, ctx) {
        const campaign = await workflowCampaignOf(ctx, ctx.params.campaignId);
        assertEditable(campaign);
        await this.moveTo(
          ctx,
          campaign,
          "active",
          campaign.scheduledAt ? new Date(campaign.scheduledAt) : null,
        );
        return campaignOf(ctx, campaign.id);
      },
    }),

    /** A new draft with this campaign's workflow, triggers and priority. campaigns.write. */
    clone: defineAction({
      rest: `POST ${WS}/:campaignId/clone`,
      openapi: { tags, summary: "Copy a campaign as a new draft" },
      ...write,
      params: schemas.get,
      status: 201,
      result: results.detail,
      async handler(ctx) {
        const campaign = await campaignOf(ctx, ctx.params.campaignId);
        const id = newId();
        await repo.cloneCampaign(workspaceOf(ctx), campaign.id, id, `${campaign.name} (copy)`.slice(0, 200));
        return campaignOf(ctx, id);
      },
    }),

    /** Replace the draft workflow, validated whole (400 naming the path). campaigns.write. */
    workflowPut: defineAction({
      rest: `PUT ${WS}/:campaignId/workflow`,
      openapi: { tags, summary: "Replace the draft workflow (validated)" },
      ...write,
      params: schemas.workflowPut,
      result: results.workflow,
      async handler(ctx) {
        const { campaignId, workspaceId: _ws, ...input } = ctx.params;
        const campaign = await workflowCampaignOf(ctx, campaignId);
        assertEditable(campaign);
        const workflow = await assertWorkflow(ctx, input);
        await repo.updateCampaign(workspaceOf(ctx), campaignId, { workflow });
        return (await campaignOf(ctx, campaignId)).workflow;
      },
    }),

    /** Check a workflow without saving it: `{valid, errors}`. campaigns.read. */
    workflowValidate: defineAction({
      rest: `POST ${WS}/:campaignId/workflow`,
      openapi: { tags, summary: "Validate a workflow without saving it" },
      ...read,
      params: schemas.workflowPut,
      result: results.validation,
      async handler(ctx) {
        const { campaignId, workspaceId: _ws, ...input } = ctx.params;
        await campaignOf(ctx, campaignId);
        const errors = await workflowIssues(ctx, input);
        return { valid: errors.length === 0, errors };
      },
    }),

    /** Published versions, newest first. campaigns.read. */
    versions: defineAction({
      rest: `GET ${WS}/:campaignId/versions`,
      openapi: { tags, summary: "List published versions" },
      ...read,
      params: schemas.versions,
      result: results.versions,
      async handler(ctx) {
        const campaign = await campaignOf(ctx, ctx.params.campaignId);
        return versionsRepo.listVersions(workspaceOf(ctx), campaign.id, pageRequest(ctx.params));
      },
    }),

    /** Publish: the draft, validated, becomes the next immutable version; new enrollments take it. campaigns.write. */
    publish: defineAction({
      rest: `POST ${WS}/:campaignId/versions`,
      openapi: { tags, summary: "Publish the draft as a new version" },
      ...write,
      params: schemas.versionCreate,
      status: 201,
      result: results.version,
      async handler(ctx) {
        const campaign = await workflowCampaignOf(ctx, ctx.params.campaignId);
        assertEditable(campaign);
        await assertWorkflow(ctx, campaign.workflow);
        return versionsRepo.publishVersion(workspaceOf(ctx), campaign.id, ctx.params.note ?? null);
      },
    }),

    /** Copy a version's workflow and triggers into the draft (unpublished; the status stays). campaigns.write. */
    restore: defineAction({
      rest: `POST ${WS}/:campaignId/versions/:versionId/restore`,
      openapi: { tags, summary: "Copy a version into the draft" },
      ...write,
      params: schemas.restore,
      result: results.detail,
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const campaign = await workflowCampaignOf(ctx, ctx.params.campaignId);
        assertEditable(campaign);
        const version = found(
          await versionsRepo.getVersion(ws, campaign.id, ctx.params.versionId),
          "Version",
        );
        await versionsRepo.restoreVersion(ws, campaign.id, version);
        return campaignOf(ctx, campaign.id);
      },
    }),
  },

  methods: {
    /** A lifecycle move with what it implies: activation publishes an unpublished draft; completion exits the live enrollments. */
    async moveTo(ctx: AppContext, campaign: MovedCampaign, to: CampaignStatus, scheduledAt: Date | null) {
      const ws = workspaceOf(ctx);
      const problem = transitionProblem(campaign.status, to, scheduledAt, new Date());
      if (problem) throw invalidState(problem);
      // A broadcast has no workflow: a paused one made active again sends on (claimStalledBroadcasts).
      if (
        campaign.type === "workflow" &&
        (to === "active" || to === "scheduled") &&
        !campaign.publishedVersion
      ) {
        await assertWorkflow(ctx, campaign.workflow);
        await versionsRepo.publishVersion(ws, campaign.id, null, to);
        if (to === "active") this.wake();
        return;
      }
      await repo.updateCampaign(ws, campaign.id, { status: to });
      if (to === "completed" || to === "archived")
        await enrollmentsRepo.exitLive(
          ws,
          campaign.id,
          to === "completed" ? "campaign_completed" : "campaign_archived",
        );
      if (to === "active") this.wake();
    },
  },

  // Here, not in the background mixin: a service's own `stopped` runs before its mixins' (the pool's release).
  stopped() {
    return this.stopBackground();
  },
});
