import { requires } from "../../lib/access";
import {
  fieldError,
  found,
  invalidState,
  isNotFound,
  notFound,
  nullIfNotFound,
  validationError,
} from "../../lib/errors";
import type { AppContext } from "../../lib/moleculer-types";
import { systemCall } from "../../lib/system-call";
import { workspaceOf } from "../../lib/tenancy";
import { validateFilter, type FilterGroup } from "../segments/filter-schema";
import type { Audience } from "./broadcasts.repo";
import * as repo from "./campaigns.repo";
import type { CampaignDetail } from "./campaigns.schemas";
import { references, validateWorkflow, type Workflow } from "./workflow";

/** What the campaigns service and its action mixins share: routes, access, and the checks of a save. */

export const WS = "/workspaces/:workspaceId/campaigns";
export const tags = ["Campaigns"];
export const ACCESS = {
  read: requires("campaigns.read"),
  write: requires("campaigns.write"),
  remove: requires("campaigns.delete"),
} as const;

export const campaignOf = async (ctx: AppContext, campaignId: string): Promise<CampaignDetail> =>
  found(await repo.getCampaign(workspaceOf(ctx), campaignId), "Campaign");

/** A workflow campaign: a broadcast has no workflow, triggers or enrollments (409). */
export async function workflowCampaignOf(ctx: AppContext, campaignId: string): Promise<CampaignDetail> {
  const campaign = await campaignOf(ctx, campaignId);
  if (campaign.type !== "workflow")
    throw invalidState("A broadcast has no workflow, triggers or enrollments");
  return campaign;
}

/** The workspace's segment (its type), or null when it has none. */
export async function segmentOf(ctx: AppContext, segmentId: unknown): Promise<{ type: string } | null> {
  const workspaceId = workspaceOf(ctx);
  return systemCall<{ type: string }>(ctx, workspaceId, "segments.get", { workspaceId, segmentId }).catch(
    nullIfNotFound,
  );
}

/** An archived campaign is final: nothing of it changes. */
export function assertEditable(campaign: CampaignDetail): void {
  if (campaign.status === "archived") throw invalidState("An archived campaign cannot change");
}

/**
 * A workflow's problems, each at its path: its shape (workflow.ts), then the
 * templates, segments and campaigns it names (unknown, or a template of
 * another channel). Empty when it may be saved.
 */
export async function workflowIssues(ctx: AppContext, input: unknown) {
  const issues = validateWorkflow(input);
  if (issues.length) return issues;
  const ws = workspaceOf(ctx);
  const refs = references(input as Workflow);
  const checks = [
    ...refs.templates.map(async ({ field, id, channel }) => {
      try {
        const resolved = await systemCall<{
          template: { channel: string };
        }>(ctx, ws, "templates.resolve", { templateId: id });
        return resolved.template.channel === channel
          ? null
          : { field, message: `is a ${resolved.template.channel} template, not ${channel}` };
      } catch (err) {
        if (isNotFound(err)) return { field, message: `no template ${id}` };
        throw err;
      }
    }),
    ...refs.segments.map(async ({ field, id }) => {
      const segment = await segmentOf(ctx, id);
      if (!segment) return { field, message: `no segment ${id}` };
      return segment.type === "static" ? null : { field, message: "must name a static segment" };
    }),
    ...refs.campaigns.map(async ({ field, id }) =>
      (await repo.getCampaign(ws, id)) ? null : { field, message: `no campaign ${id}` },
    ),
  ];
  return (await Promise.all(checks)).filter((issue) => issue !== null);
}

/** 400 with every problem of a workflow, the first in the message. */
export async function assertWorkflow(ctx: AppContext, input: unknown): Promise<Workflow> {
  const issues = await workflowIssues(ctx, input);
  if (issues.length)
    throw validationError(`Invalid workflow: ${issues[0].field} ${issues[0].message}`, issues);
  return input as Workflow;
}

/**
 * The one audience a request names (`segmentId`, `contactIds` or `filter`):
 * 400 unless exactly one, 404 for a segment the workspace lacks, 400 naming
 * the bad node of a filter.
 */
export async function audienceOf(
  ctx: AppContext,
  p: { segmentId?: string; contactIds?: string[]; filter?: Record<string, unknown> },
): Promise<Audience> {
  const given = [p.segmentId, p.contactIds, p.filter].filter((a) => a !== undefined).length;
  if (given !== 1) throw fieldError("segmentId", "give exactly one of segmentId, contactIds and filter");
  if (p.contactIds) return { contactIds: [...new Set(p.contactIds)] };
  if (p.filter) {
    const { issues } = validateFilter(p.filter);
    if (issues.length)
      throw validationError(`Invalid filter: ${issues[0].field} ${issues[0].message}`, issues);
    return { filter: p.filter as unknown as FilterGroup };
  }
  if (!(await segmentOf(ctx, p.segmentId)))
    throw notFound("Segment", { field: "segmentId", message: `no segment ${p.segmentId}` });
  return { segmentId: p.segmentId! };
}
