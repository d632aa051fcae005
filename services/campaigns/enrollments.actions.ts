import { actingUserId } from "../../lib/audit";
import { defineAction } from "../../lib/define-service";
import { startJob } from "../../lib/jobs";
import { conflict, found, invalidState, notFound } from "../../lib/errors";
import type { AppContext } from "../../lib/moleculer-types";
import { pageRequest } from "../../lib/pagination";
import { queueStatsAction } from "../../lib/queue-stats";
import { setLiveEnrollments } from "../../lib/business-metrics";
import { systemCall } from "../../lib/system-call";
import { workspaceOf } from "../../lib/tenancy";
import { winnerOf } from "./ab.repo";
import * as repo from "./campaigns.repo";
import * as enrollRepo from "./enroll.repo";
import * as enrollmentsRepo from "./enrollments.repo";
import * as logsRepo from "./logs.repo";
import { results, schemas, type CampaignDetail } from "./campaigns.schemas";
import { handleChainEvent } from "./chain-step";
import { ACCESS, audienceOf, campaignOf, tags, workflowCampaignOf, WS } from "./campaigns.shared";
import { dryRun } from "./interpreter";
import { triggerMatches } from "./triggers";
import { PASS_SIZE } from "./background";
import type { CampaignsService } from "./campaigns.this";

const { read, write } = ACCESS;
const CONTACTS = "/workspaces/:workspaceId/contacts/automation";

/** Enroll one contact by hand (re-entry rules ignored): 409 CONFLICT when enrolled, INVALID_STATE when inactive. */
async function enrollOne(ctx: AppContext, campaign: CampaignDetail, contactId: string) {
  if (campaign.status !== "active" || !campaign.publishedVersion)
    throw invalidState("Only an active campaign enrolls contacts");
  const ws = workspaceOf(ctx);
  const [enrollment] = await enrollRepo.enroll(ws, {
    campaignId: campaign.id,
    version: campaign.publishedVersion,
    contactIds: [contactId],
    triggerId: null,
    event: null,
    reentry: "manual",
  });
  if (enrollment) return enrollment;
  const known = await enrollRepo.enrollable(ws, campaign.id, [contactId]);
  if (!known.has(contactId))
    throw notFound("Contact", { field: "contactId", message: `no contact ${contactId}` });
  throw conflict("The contact is already enrolled in this campaign");
}

/** Enrollments, their logs, the dry-run and the run itself; mixed into `campaigns`. */
export const enrollmentActions = {
  actions: {
    /** Enroll a contact now (re-entry rules ignored). campaigns.write. */
    enroll: defineAction({
      rest: `POST ${WS}/:campaignId/enroll`,
      openapi: { tags, summary: "Enroll a contact" },
      ...write,
      params: schemas.enroll,
      status: 201,
      result: results.enrollment,
      async handler(this: CampaignsService, ctx) {
        const enrollment = await enrollOne(
          ctx,
          await campaignOf(ctx, ctx.params.campaignId),
          ctx.params.contactId,
        );
        this.wake("steps");
        return enrollment;
      },
    }),

    /** Enroll up to 1,000 contacts; each one not enrolled says why. campaigns.write. */
    batch: defineAction({
      rest: `POST ${WS}/:campaignId/batch`,
      openapi: {
        tags,
        summary: "Enroll many contacts (a list now; a segment or a filter as a job, 202)",
      },
      ...write,
      params: schemas.batch,
      result: results.batch,
      alsoAnswers: { 202: results.job },
      async handler(this: CampaignsService, ctx) {
        const campaign = await workflowCampaignOf(ctx, ctx.params.campaignId);
        if (campaign.status !== "active" || !campaign.publishedVersion)
          throw invalidState("Only an active campaign enrolls contacts");
        const audience = await audienceOf(ctx, ctx.params);
        const ws = workspaceOf(ctx);
        const version = campaign.publishedVersion;
        if (!("contactIds" in audience)) {
          // One statement over the whole audience; the job's result is {enrolled, skipped} (skipped: enrolled already).
          const { jobId } = await startJob(
            { workspaceId: ws, type: "campaigns.batch", createdBy: actingUserId(ctx) },
            async () => {
              const { enrolled, total } = await enrollRepo.enrollAudience(ws, campaign.id, version, audience);
              if (enrolled) this.wake("steps");
              return { enrolled, skipped: total - enrolled };
            },
            (err) => this.logger.error(`Batch enrollment into ${campaign.id} failed`, err),
          );
          ctx.meta.$statusCode = 202;
          return { jobId };
        }
        const contactIds = audience.contactIds;
        const live = await enrollRepo.enrollable(ws, campaign.id, contactIds);
        const enrolled = await enrollRepo.enroll(ws, {
          campaignId: campaign.id,
          version: campaign.publishedVersion,
          contactIds,
          triggerId: null,
          event: null,
          reentry: "manual",
        });
        const done = new Set(enrolled.map((e) => e.contactId));
        const skipped = contactIds
          .filter((id) => !done.has(id))
          .map((contactId) => ({
            contactId,
            reason: live.has(contactId) ? "already_enrolled" : "not_found",
          }));
        if (enrolled.length) this.wake("steps");
        return { enrolled: enrolled.length, skipped };
      },
    }),

    /** The campaign's enrollments, newest first; filters `status`, `contactId`. campaigns.read. */
    enrollments: defineAction({
      rest: `GET ${WS}/:campaignId/enrollments`,
      openapi: { tags, summary: "List enrollments" },
      ...read,
      params: schemas.enrollments,
      result: results.enrollments,
      async handler(ctx) {
        const { campaignId, status, contactId } = ctx.params;
        await campaignOf(ctx, campaignId);
        return enrollmentsRepo.listEnrollments(
          workspaceOf(ctx),
          { campaignId, status, contactId },
          pageRequest(ctx.params),
        );
      },
    }),

    /** Every step taken, newest first; filters `enrollmentId`, `contactId`, `nodeId`. campaigns.read. */
    logs: defineAction({
      rest: `GET ${WS}/:campaignId/logs`,
      openapi: { tags, summary: "List the log of steps taken" },
      ...read,
      params: schemas.logs,
      result: results.logs,
      async handler(ctx) {
        const { campaignId, enrollmentId, contactId, nodeId } = ctx.params;
        await campaignOf(ctx, campaignId);
        return logsRepo.listLogs(
          workspaceOf(ctx),
          campaignId,
          { enrollmentId, contactId, nodeId },
          pageRequest(ctx.params),
        );
      },
    }),

    /**
     * The path the draft would take for a contact, with the reason at each
     * node, by the same interpreter as the run; saves nothing. campaigns.read.
     */
    dryRun: defineAction({
      rest: `POST ${WS}/:campaignId/dry-run`,
      openapi: { tags, summary: "Explain the path a contact would take (saves nothing)" },
      ...read,
      params: schemas.dryRun,
      result: results.dryRun,
      async handler(ctx) {
        const { campaignId, contactId, event } = ctx.params;
        const ws = workspaceOf(ctx);
        const campaign = await campaignOf(ctx, campaignId);
        const live = await enrollRepo.enrollable(ws, campaignId, [contactId]);
        if (!live.has(contactId))
          throw notFound("Contact", { field: "contactId", message: `no contact ${contactId}` });
        const path = await dryRun(
          campaign.workflow,
          { campaignId, enrollmentId: `dry-run:${contactId}`, contactId, now: new Date() },
          {
            matches: async (filter) =>
              (await systemCall<{ matches: boolean }>(ctx, ws, "segments.matches", { contactId, filter }))
                .matches,
            winner: (nodeId) => winnerOf(campaignId, nodeId),
          },
        );
        const active = campaign.triggers.filter((t) => t.active);
        let reason: string | null = null;
        if (live.get(contactId)) reason = "already enrolled";
        else if (event && !active.some((t) => triggerMatches(t, event)))
          reason = `no active trigger enrolls on ${event.type}`;
        return { wouldEnroll: reason === null, reason, path };
      },
    }),

    /** A contact's enrollments in every campaign (`contactId` required). campaigns.read. */
    automationList: defineAction({
      rest: `GET ${CONTACTS}`,
      openapi: { tags: ["Contacts"], summary: "List a contact's campaign enrollments" },
      ...read,
      params: schemas.automationList,
      result: results.enrollments,
      handler: (ctx) =>
        enrollmentsRepo.listEnrollments(
          workspaceOf(ctx),
          { contactId: ctx.params.contactId },
          pageRequest(ctx.params),
        ),
    }),

    /** Enroll a contact in a campaign (as `enroll`). campaigns.write. */
    automationEnroll: defineAction({
      rest: `POST ${CONTACTS}`,
      openapi: { tags: ["Contacts"], summary: "Enroll a contact in a campaign" },
      ...write,
      params: schemas.automationEnroll,
      status: 201,
      result: results.enrollment,
      async handler(this: CampaignsService, ctx) {
        const campaign = found(await repo.getCampaign(workspaceOf(ctx), ctx.params.campaignId), "Campaign");
        const enrollment = await enrollOne(ctx, campaign, ctx.params.contactId);
        this.wake("steps");
        return enrollment;
      },
    }),

    /**
     * Internal (the events chain, step 2): goals reached complete their
     * enrollments, waits for this event resume, and matching event triggers
     * enroll, all before the event's answer.
     */
    handleEvent: defineAction({
      params: schemas.handleEvent,
      result: results.handleEvent,
      async handler(this: CampaignsService, ctx) {
        const result = await handleChainEvent(ctx, ctx.params);
        if (result.enrolled || result.resumed) this.wake("steps");
        return result;
      },
    }),

    /** Internal (templates, before a delete): the campaigns that send a template. */
    templateUse: defineAction({
      params: schemas.templateUse,
      result: results.templateUse,
      handler: async (ctx) => ({
        campaigns: await repo.campaignsUsingTemplate(workspaceOf(ctx), ctx.params.templateId),
      }),
    }),

    /**
     * Internal (`GET /api/cron/tick`): the background's look for work, its
     * minute's work included (scheduled campaigns due become active, stopped
     * broadcasts send on, the membership log, A/B splits, contacts' dates),
     * then one pass of due steps.
     */
    processDue: defineAction({
      params: schemas.processDue,
      result: results.processDue,
      async handler(this: CampaignsService, ctx) {
        const { activated, resumedBroadcasts, decidedAbTests } = await this.findWork("now");
        const { advanced, failed } = await this.pass(ctx.params.limit ?? PASS_SIZE);
        return { activated, advanced, failed, resumedBroadcasts, decidedAbTests };
      },
    }),

    /**
     * Internal (timer, operators' `queues`): the step queue's and scheduled
     * campaigns' figures, set in this process's gauges with the live enrollments by status.
     */
    queueStats: queueStatsAction(
      async () => [await enrollmentsRepo.stepQueueFigures(), await repo.scheduledQueueFigures()],
      async (metrics) => setLiveEnrollments(metrics, await enrollmentsRepo.liveEnrollmentCounts()),
    ),
  },
};
