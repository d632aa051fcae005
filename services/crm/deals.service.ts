import { requires } from "../../lib/access";
import { actingUserId, audit } from "../../lib/audit";
import { defineAction, defineService } from "../../lib/define-service";
import { found, notFound } from "../../lib/errors";
import type { AppContext } from "../../lib/moleculer-types";
import { pageRequest } from "../../lib/pagination";
import { workspaceOf, type WorkspaceId } from "../../lib/tenancy";
import { DatabaseMixin } from "../../mixins/database.mixin";
import {
  DealSchema,
  DealStatsSchema,
  DealWithHistorySchema,
  results,
  schemas,
  SuccessSchema,
} from "./crm.schemas";
import { asDate, assertMember, assertReferences, sentFields } from "./crm.shared";
import * as repo from "./deals.repo";

const remove = requires("contacts.delete");
const read = requires("contacts.read");
const write = requires("contacts.write");

const openapi = (summary: string) => ({ tags: ["Deals and pipelines"], summary });

/** Owner must be a member; contact and company must be of this workspace (404 otherwise). */
async function checkLinks(
  ctx: AppContext<{ ownerId?: string | null; contactId?: string | null; companyId?: string | null }>,
  workspaceId: WorkspaceId,
) {
  await assertMember(ctx, workspaceId, ctx.params.ownerId, "ownerId");
  await assertReferences(ctx, workspaceId, {
    contactId: ctx.params.contactId,
    companyId: ctx.params.companyId,
  });
}

/** Deals: value, stage of a pipeline, status open/won/lost, links to a contact and a company. contacts.* scopes. */
export default defineService({
  name: "deals",
  mixins: [DatabaseMixin],
  settings: { rest: "/" },

  actions: {
    /** Deals, paginated; search (title), filters and sort. contacts.read. */
    list: defineAction({
      rest: "GET /workspaces/:workspaceId/deals",
      ...read,
      params: schemas.deals.list,
      result: results.deals,
      openapi: openapi(
        "List deals (search by title; filter by pipeline, stage, status, owner, contact, company, currency, tag, value and date ranges; sort title, value, createdAt, updatedAt, expectedCloseDate, closedAt, stageChangedAt)",
      ),
      async handler(ctx) {
        const filters = {
          ...ctx.params,
          createdFrom: asDate(ctx.params.createdFrom),
          createdTo: asDate(ctx.params.createdTo),
        };
        return repo.listDeals(workspaceOf(ctx), filters, pageRequest(ctx.params));
      },
    }),

    /** Count and value per stage, open/won/lost totals and win rate. contacts.read. */
    stats: defineAction({
      rest: "GET /workspaces/:workspaceId/deals/stats",
      ...read,
      params: schemas.deals.stats,
      result: DealStatsSchema,
      openapi: openapi(
        "Deal statistics: count, value and weighted value per stage of each pipeline (values per currency), open/won/lost totals, win rate",
      ),
      async handler(ctx) {
        const filters = {
          ...ctx.params,
          createdFrom: asDate(ctx.params.createdFrom),
          createdTo: asDate(ctx.params.createdTo),
        };
        return found(await repo.dealStats(workspaceOf(ctx), filters), "Pipeline");
      },
    }),

    /** One deal with its stage history. contacts.read. */
    get: defineAction({
      rest: "GET /workspaces/:workspaceId/deals/:dealId",
      ...read,
      params: schemas.deals.get,
      result: DealWithHistorySchema,
      openapi: openapi("Get a deal with its stage history"),
      handler: async (ctx) => found(await repo.getDeal(workspaceOf(ctx), ctx.params.dealId), "Deal"),
    }),

    /** Create a deal (default pipeline and its first stage unless given; owner defaults to the caller). contacts.write. */
    create: defineAction({
      rest: "POST /workspaces/:workspaceId/deals",
      ...write,
      params: schemas.deals.create,
      status: 201,
      result: DealSchema,
      openapi: openapi(
        "Create a deal (pipelineId defaults to the default pipeline, stageId to its first stage; contactId/companyId of another workspace: 404)",
      ),
      async handler(ctx) {
        const workspaceId = workspaceOf(ctx);
        await checkLinks(ctx, workspaceId);
        const deal = found(
          await repo.createDeal(
            workspaceId,
            ctx.params as repo.DealInput & { title: string },
            actingUserId(ctx),
          ),
          "Pipeline",
        );
        await audit(
          ctx,
          "deal.created",
          { type: "deal", id: deal.id },
          { title: deal.title, stageId: deal.stageId, value: deal.value, currency: deal.currency },
        );
        return deal;
      },
    }),

    /** Change a deal's fields (not its stage: see moveStage). contacts.write. */
    update: defineAction({
      rest: "PATCH /workspaces/:workspaceId/deals/:dealId",
      ...write,
      params: schemas.deals.update,
      result: DealSchema,
      openapi: openapi(
        "Update a deal (attributes merge key by key, tags replace; the stage moves through PATCH .../stage)",
      ),
      async handler(ctx) {
        const workspaceId = workspaceOf(ctx);
        await checkLinks(ctx, workspaceId);
        const deal = found(await repo.updateDeal(workspaceId, ctx.params.dealId, ctx.params), "Deal");
        await audit(
          ctx,
          "deal.updated",
          { type: "deal", id: deal.id },
          { fields: sentFields(ctx.params, repo.DEAL_FIELDS) },
        );
        return deal;
      },
    }),

    /** Move a deal to another stage of its pipeline; won/lost stages close it. contacts.write. */
    moveStage: defineAction({
      rest: "PATCH /workspaces/:workspaceId/deals/:dealId/stage",
      ...write,
      params: schemas.deals.moveStage,
      result: DealWithHistorySchema,
      openapi: openapi(
        "Move a deal to a stage of its own pipeline (400 for a stage of another pipeline); recorded in the stage history; answers the deal with its history",
      ),
      async handler(ctx) {
        const workspaceId = workspaceOf(ctx);
        const { moved, deal } = found(
          await repo.moveDeal(
            workspaceId,
            ctx.params.dealId,
            ctx.params.stageId,
            ctx.params.lostReason,
            actingUserId(ctx),
          ),
          "Deal",
        );
        if (moved)
          await audit(
            ctx,
            "deal.stage_changed",
            { type: "deal", id: deal.id },
            { stageId: deal.stageId, status: deal.status },
          );
        return found(await repo.getDeal(workspaceId, deal.id), "Deal");
      },
    }),

    /** Delete a deal and its history. contacts.delete. */
    remove: defineAction({
      rest: "DELETE /workspaces/:workspaceId/deals/:dealId",
      ...remove,
      params: schemas.deals.remove,
      result: SuccessSchema,
      openapi: openapi("Delete a deal"),
      async handler(ctx) {
        if (!(await repo.deleteDeal(workspaceOf(ctx), ctx.params.dealId))) throw notFound("Deal");
        await audit(ctx, "deal.deleted", { type: "deal", id: ctx.params.dealId });
        return { success: true as const };
      },
    }),
  },
});
