import type { ServiceSchema } from "moleculer";
import { audit } from "../../lib/audit";
import type { AppContext } from "../../lib/moleculer-types";
import { pageRequest } from "../../lib/pagination";
import { workspaceOf } from "../../lib/tenancy";
import { DbMixin } from "../../mixins/db.mixin";
import { Deal } from "../../models";
import {
  answers,
  DealSchema,
  DealStatsSchema,
  DealWithHistorySchema,
  pageOf,
  SuccessSchema,
} from "./crm.openapi";
import { schemas } from "./crm.schemas";
import { actorUserId, assertMember, assertReferences, sentFields } from "./crm.shared";
import * as repo from "./deals.repo";

/** Validated params arrive typed by the schema; handlers read them through this alias. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Ctx = AppContext<Record<string, any>>;

const openapi = (summary: string, responses: Record<string, unknown>) => ({
  tags: ["Deals and pipelines"],
  summary,
  responses,
});

/** Owner must be a member; contact and company must be of this workspace (404 otherwise). */
async function checkLinks(ctx: Ctx, workspaceId: string) {
  await assertMember(ctx, workspaceId, ctx.params.ownerId, "ownerId");
  await assertReferences(workspaceId, { contactId: ctx.params.contactId, companyId: ctx.params.companyId });
}

/** Deals: value, stage of a pipeline, status open/won/lost, links to a contact and a company. contacts.* scopes. */
const DealsService: ServiceSchema = {
  name: "deals",
  mixins: [DbMixin(Deal)],
  settings: { rest: "/" },

  actions: {
    /** Deals, paginated; search (title), filters and sort. contacts.read. */
    list: {
      rest: "GET /workspaces/:workspaceId/deals",
      auth: "any",
      permission: "contacts.read",
      params: schemas.deals.list,
      openapi: openapi(
        "List deals (search by title; filter by pipeline, stage, status, owner, contact, company, currency, tag, value and date ranges; sort title, value, createdAt, updatedAt, expectedCloseDate, closedAt, stageChangedAt)",
        answers(pageOf(DealSchema)),
      ),
      handler: (ctx: Ctx) => repo.listDeals(workspaceOf(ctx), ctx.params, pageRequest(ctx.params)),
    },

    /** Count and value per stage, open/won/lost totals and win rate. contacts.read. */
    stats: {
      rest: "GET /workspaces/:workspaceId/deals/stats",
      auth: "any",
      permission: "contacts.read",
      params: schemas.deals.stats,
      openapi: openapi(
        "Deal statistics: count, value and weighted value per stage of each pipeline (values per currency), open/won/lost totals, win rate",
        answers(DealStatsSchema),
      ),
      handler: (ctx: Ctx) => repo.dealStats(workspaceOf(ctx), ctx.params),
    },

    /** One deal with its stage history. contacts.read. */
    get: {
      rest: "GET /workspaces/:workspaceId/deals/:dealId",
      auth: "any",
      permission: "contacts.read",
      params: schemas.deals.get,
      openapi: openapi("Get a deal with its stage history", answers(DealWithHistorySchema)),
      handler: (ctx: Ctx) => repo.getDeal(workspaceOf(ctx), ctx.params.dealId),
    },

    /** Create a deal (default pipeline and its first stage unless given; owner defaults to the caller). contacts.write. */
    create: {
      rest: "POST /workspaces/:workspaceId/deals",
      auth: "any",
      permission: "contacts.write",
      params: schemas.deals.create,
      openapi: openapi(
        "Create a deal (pipelineId defaults to the default pipeline, stageId to its first stage; contactId/companyId of another workspace: 404)",
        answers(DealSchema, 201),
      ),
      async handler(ctx: Ctx) {
        const workspaceId = workspaceOf(ctx);
        await checkLinks(ctx, workspaceId);
        const deal = await repo.createDeal(
          workspaceId,
          ctx.params as repo.DealInput & { title: string },
          actorUserId(ctx),
        );
        await audit(
          ctx,
          "deal.created",
          { type: "deal", id: deal.id },
          { title: deal.title, stageId: deal.stageId, value: deal.value, currency: deal.currency },
        );
        ctx.meta.$statusCode = 201;
        return deal;
      },
    },

    /** Change a deal's fields (not its stage: see moveStage). contacts.write. */
    update: {
      rest: "PATCH /workspaces/:workspaceId/deals/:dealId",
      auth: "any",
      permission: "contacts.write",
      params: schemas.deals.update,
      openapi: openapi(
        "Update a deal (attributes merge key by key, tags replace; the stage moves through PATCH .../stage)",
        answers(DealSchema),
      ),
      async handler(ctx: Ctx) {
        const workspaceId = workspaceOf(ctx);
        await checkLinks(ctx, workspaceId);
        const deal = await repo.updateDeal(workspaceId, ctx.params.dealId, ctx.params);
        await audit(
          ctx,
          "deal.updated",
          { type: "deal", id: deal.id },
          { fields: sentFields(ctx.params, repo.DEAL_FIELDS) },
        );
        return deal;
      },
    },

    /** Move a deal to another stage of its pipeline; won/lost stages close it. contacts.write. */
    moveStage: {
      rest: "PATCH /workspaces/:workspaceId/deals/:dealId/stage",
      auth: "any",
      permission: "contacts.write",
      params: schemas.deals.moveStage,
      openapi: openapi(
        "Move a deal to a stage of its own pipeline (400 for a stage of another pipeline); recorded in the stage history; answers the deal with its history",
        answers(DealWithHistorySchema),
      ),
      async handler(ctx: Ctx) {
        const workspaceId = workspaceOf(ctx);
        const { moved, deal } = await repo.moveDeal(
          workspaceId,
          ctx.params.dealId,
          ctx.params.stageId,
          ctx.params.lostReason,
          actorUserId(ctx),
        );
        if (moved)
          await audit(
            ctx,
            "deal.stage_changed",
            { type: "deal", id: deal.id },
            { stageId: deal.stageId, status: deal.status },
          );
        return repo.getDeal(workspaceId, deal.id);
      },
    },

    /** Delete a deal and its history. contacts.delete. */
    remove: {
      rest: "DELETE /workspaces/:workspaceId/deals/:dealId",
      auth: "any",
      permission: "contacts.delete",
      params: schemas.deals.remove,
      openapi: openapi("Delete a deal", answers(SuccessSchema)),
      async handler(ctx: Ctx) {
        await repo.deleteDeal(workspaceOf(ctx), ctx.params.dealId);
        await audit(ctx, "deal.deleted", { type: "deal", id: ctx.params.dealId });
        return { success: true };
      },
    },
  },
};

export default DealsService;
