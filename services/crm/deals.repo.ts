import { type Transaction } from "sequelize";
import { newId } from "../../lib/crypto";
import { Binds, database, likeEscape, query } from "../../lib/database";
import { fieldError } from "../../lib/errors";
import { selectPage, sortOrder, type PageRequest } from "../../lib/pagination";
import { Deal, DealStageHistory, Pipeline } from "../../models";
import {
  closedAtAfterMove,
  mergeObject,
  statusOfStage,
  summariseDeals,
  type DealGroupRow,
} from "./crm.rules";
import { defaultPipeline, findPipeline } from "./pipelines.repo";
import type { WorkspaceId } from "../../lib/tenancy";

/** Every query on deals and their stage history; each takes the workspace id first. */

export interface DealInput {
  title?: string;
  value?: number;
  currency?: string;
  contactId?: string | null;
  companyId?: string | null;
  ownerId?: string | null;
  expectedCloseDate?: string | null;
  lostReason?: string | null;
  description?: string | null;
  tags?: string[];
  attributes?: Record<string, unknown>;
}

export const DEAL_FIELDS = [
  "title",
  "value",
  "currency",
  "contactId",
  "companyId",
  "ownerId",
  "expectedCloseDate",
  "lostReason",
  "description",
  "tags",
  "attributes",
] as const;

export const DEFAULT_CURRENCY = "USD";

/** A deal's fields as a view needs them: a model instance or a listed row. */
type DealFields = Pick<
  Deal,
  | (typeof DEAL_FIELDS)[number]
  | "id"
  | "pipelineId"
  | "stageId"
  | "status"
  | "closedAt"
  | "stageChangedAt"
  | "createdBy"
  | "createdAt"
  | "updatedAt"
>;

// The date only as text, as the model reads it.
const DEAL_COLUMNS = `id, title, value, currency, pipeline_id AS "pipelineId", stage_id AS "stageId", status,
  contact_id AS "contactId", company_id AS "companyId", owner_id AS "ownerId",
  to_char(expected_close_date, 'YYYY-MM-DD') AS "expectedCloseDate", closed_at AS "closedAt",
  lost_reason AS "lostReason", description, tags, attributes, stage_changed_at AS "stageChangedAt",
  created_by AS "createdBy", created_at AS "createdAt", updated_at AS "updatedAt"`;

export const dealView = (d: DealFields) => ({
  id: d.id,
  title: d.title,
  value: Number(d.value),
  currency: d.currency,
  pipelineId: d.pipelineId,
  stageId: d.stageId,
  status: d.status,
  contactId: d.contactId,
  companyId: d.companyId,
  ownerId: d.ownerId,
  expectedCloseDate: d.expectedCloseDate,
  closedAt: d.closedAt,
  lostReason: d.lostReason,
  description: d.description,
  tags: d.tags,
  attributes: d.attributes,
  stageChangedAt: d.stageChangedAt,
  createdBy: d.createdBy,
  createdAt: d.createdAt,
  updatedAt: d.updatedAt,
});
export type DealView = ReturnType<typeof dealView>;

const historyView = (h: DealStageHistory) => ({
  id: h.id,
  fromStageId: h.fromStageId,
  toStageId: h.toStageId,
  fromStatus: h.fromStatus,
  toStatus: h.toStatus,
  changedBy: h.changedBy,
  changedAt: h.changedAt,
});

/** A YYYY-MM-DD string that names a real day (2026-02-30 does not). */
export function assertCalendarDate(field: string, value: string | null | undefined) {
  if (value === null || value === undefined) return;
  const date = new Date(`${value}T00:00:00Z`);
  if (Number.isNaN(date.getTime()) || date.toISOString().slice(0, 10) !== value)
    throw fieldError(field, "must be a real date as YYYY-MM-DD");
}

const SORTS = {
  title: "title",
  value: "value",
  createdAt: "created_at",
  updatedAt: "updated_at",
  expectedCloseDate: "expected_close_date",
  closedAt: "closed_at",
  stageChangedAt: "stage_changed_at",
};

const FILTER_COLUMNS = {
  pipelineId: "pipeline_id",
  stageId: "stage_id",
  status: "status",
  ownerId: "owner_id",
  contactId: "contact_id",
  companyId: "company_id",
  currency: "currency",
} as const;

export interface DealFilters {
  search?: string;
  pipelineId?: string;
  stageId?: string;
  status?: string;
  ownerId?: string;
  contactId?: string;
  companyId?: string;
  currency?: string;
  tag?: string;
  minValue?: number;
  maxValue?: number;
  expectedCloseFrom?: string;
  expectedCloseTo?: string;
  createdFrom?: Date;
  createdTo?: Date;
  sort?: string;
}

export async function listDeals(workspaceId: WorkspaceId, f: DealFilters, page: PageRequest) {
  assertCalendarDate("expectedCloseFrom", f.expectedCloseFrom);
  assertCalendarDate("expectedCloseTo", f.expectedCloseTo);
  const b = Binds.inWorkspace();
  const where = ["workspace_id = $1"];
  // The expression matches deals_search_idx, so the trigram index serves it.
  if (f.search) where.push(`lower(title) LIKE ${b.p(`%${likeEscape(f.search.toLowerCase())}%`)}`);
  for (const [key, column] of Object.entries(FILTER_COLUMNS) as Array<
    [keyof typeof FILTER_COLUMNS, string]
  >) {
    if (f[key]) where.push(`${column} = ${b.p(f[key])}`);
  }
  if (f.tag) where.push(`tags @> ARRAY[${b.p(f.tag)}]::text[]`);
  if (f.minValue !== undefined) where.push(`value >= ${b.p(f.minValue)}`);
  if (f.maxValue !== undefined) where.push(`value <= ${b.p(f.maxValue)}`);
  if (f.expectedCloseFrom) where.push(`expected_close_date >= ${b.p(f.expectedCloseFrom, "date")}`);
  if (f.expectedCloseTo) where.push(`expected_close_date <= ${b.p(f.expectedCloseTo, "date")}`);
  if (f.createdFrom) where.push(`created_at >= ${b.p(f.createdFrom)}`);
  if (f.createdTo) where.push(`created_at <= ${b.p(f.createdTo)}`);
  const clause = where.join(" AND ");
  return selectPage(
    workspaceId,
    {
      select: `SELECT ${DEAL_COLUMNS} FROM deals WHERE ${clause}`,
      orderBy: sortOrder(f.sort, SORTS, "-createdAt")
        .map(([column, direction]) => `${column} ${direction}`)
        .join(", "),
      countFrom: `FROM deals WHERE ${clause}`,
    },
    b.values,
    page,
    dealView,
  );
}

export async function findDeal(
  workspaceId: WorkspaceId,
  dealId: string,
  transaction?: Transaction,
  lock = false,
): Promise<Deal | null> {
  return Deal.findOne({
    where: { id: dealId, workspaceId },
    transaction,
    ...(lock && transaction ? { lock: transaction.LOCK.UPDATE } : {}),
  });
}

/** The deal with its stage history, oldest move first; null when there is no such deal. */
export async function getDeal(workspaceId: WorkspaceId, dealId: string) {
  const deal = await findDeal(workspaceId, dealId);
  if (!deal) return null;
  const history = await DealStageHistory.findAll({
    where: { dealId, workspaceId },
    order: [
      ["changedAt", "ASC"],
      ["id", "ASC"],
    ],
  });
  return { ...dealView(deal), stageHistory: history.map(historyView) };
}

function stageOf(pipeline: Pipeline, stageId: string) {
  const stage = pipeline.stages.find((s) => s.id === stageId);
  if (!stage) throw fieldError("stageId", "is not a stage of the deal's pipeline");
  return stage;
}

/**
 * A deal starts in the given stage of the given pipeline, else in the first
 * stage of the default pipeline. Null when the given pipeline does not exist.
 */
export async function createDeal(
  workspaceId: WorkspaceId,
  input: DealInput & { title: string; pipelineId?: string; stageId?: string },
  createdBy: string | null,
) {
  assertCalendarDate("expectedCloseDate", input.expectedCloseDate);
  const sequelize = await database();
  return sequelize.transaction(async (transaction) => {
    const pipeline = input.pipelineId
      ? await findPipeline(workspaceId, input.pipelineId, transaction)
      : await defaultPipeline(workspaceId, transaction);
    if (!pipeline) return null;
    const stage = input.stageId ? stageOf(pipeline, input.stageId) : pipeline.stages[0];
    const status = statusOfStage(stage);
    const now = new Date();
    const deal = await Deal.create(
      {
        ...input,
        id: newId(),
        workspaceId,
        currency: input.currency ?? DEFAULT_CURRENCY,
        value: input.value ?? 0,
        pipelineId: pipeline.id,
        stageId: stage.id,
        status,
        closedAt: status === "open" ? null : now,
        tags: [...new Set(input.tags ?? [])],
        attributes: input.attributes ?? {},
        stageChangedAt: now,
        ownerId: input.ownerId === undefined ? createdBy : input.ownerId,
        createdBy,
      },
      { transaction },
    );
    await DealStageHistory.create(
      {
        id: newId(),
        workspaceId,
        dealId: deal.id,
        fromStageId: null,
        toStageId: stage.id,
        fromStatus: null,
        toStatus: status,
        changedBy: createdBy,
        changedAt: now,
      },
      { transaction },
    );
    return dealView(deal);
  });
}

/**
 * Change a deal's fields; attributes merge key by key, tags are replaced.
 * The stage moves through `moveDeal`. Null: no such deal.
 */
export async function updateDeal(workspaceId: WorkspaceId, dealId: string, input: DealInput) {
  assertCalendarDate("expectedCloseDate", input.expectedCloseDate);
  const deal = await findDeal(workspaceId, dealId);
  if (!deal) return null;
  const { attributes, tags, ...plain } = input;
  for (const [key, value] of Object.entries(plain)) if (value !== undefined) deal.set(key, value);
  if (attributes) deal.attributes = mergeObject(deal.attributes, attributes);
  if (tags) deal.tags = [...new Set(tags)];
  deal.changed("updatedAt", true);
  return dealView(await deal.save());
}

/**
 * Move a deal to another stage of its own pipeline, recording the move. The
 * row is locked so two concurrent moves are recorded one after the other.
 * Null: no such deal.
 */
export async function moveDeal(
  workspaceId: WorkspaceId,
  dealId: string,
  stageId: string,
  lostReason: string | null | undefined,
  changedBy: string | null,
) {
  const sequelize = await database();
  return sequelize.transaction(async (transaction) => {
    const deal = await findDeal(workspaceId, dealId, transaction, true);
    if (!deal) return null;
    // A pipeline holding deals cannot be deleted, so the deal's own pipeline is there.
    const pipeline = await findPipeline(workspaceId, deal.pipelineId, transaction);
    if (!pipeline) throw new Error(`Deal ${dealId} points at a missing pipeline`);
    const stage = stageOf(pipeline, stageId);
    if (lostReason !== undefined) deal.lostReason = lostReason;
    const moved = deal.stageId !== stage.id;
    if (moved) {
      const now = new Date();
      const from = { stageId: deal.stageId, status: deal.status };
      const status = statusOfStage(stage);
      deal.closedAt = closedAtAfterMove(from.status, status, deal.closedAt, now);
      deal.stageId = stage.id;
      deal.status = status;
      deal.stageChangedAt = now;
      await DealStageHistory.create(
        {
          id: newId(),
          workspaceId,
          dealId,
          fromStageId: from.stageId,
          toStageId: stage.id,
          fromStatus: from.status,
          toStatus: status,
          changedBy,
          changedAt: now,
        },
        { transaction },
      );
    }
    await deal.save({ transaction });
    return { moved, deal: dealView(deal) };
  });
}

export async function deleteDeal(workspaceId: WorkspaceId, dealId: string): Promise<boolean> {
  return (await Deal.destroy({ where: { id: dealId, workspaceId } })) > 0;
}

/**
 * Count and value per stage of each pipeline, and open/won/lost totals;
 * values are summed per currency. Null when the given pipeline does not exist.
 */
export async function dealStats(
  workspaceId: WorkspaceId,
  f: { pipelineId?: string; ownerId?: string; createdFrom?: Date; createdTo?: Date },
) {
  const pipelines = f.pipelineId
    ? [await findPipeline(workspaceId, f.pipelineId)]
    : await listAllPipelines(workspaceId);
  if (pipelines.some((p) => p === null)) return null;
  const binds = Binds.inWorkspace();
  const conditions = ["workspace_id = $1"];
  if (f.pipelineId) conditions.push(`pipeline_id = ${binds.p(f.pipelineId)}`);
  if (f.ownerId) conditions.push(`owner_id = ${binds.p(f.ownerId)}`);
  if (f.createdFrom) conditions.push(`created_at >= ${binds.p(f.createdFrom)}`);
  if (f.createdTo) conditions.push(`created_at <= ${binds.p(f.createdTo)}`);
  const rows = await query<DealGroupRow>(
    workspaceId,
    `SELECT pipeline_id AS "pipelineId", stage_id AS "stageId", status, currency, count(*)::int AS count, sum(value)::text AS value
       FROM deals WHERE ${conditions.join(" AND ")}
      GROUP BY pipeline_id, stage_id, status, currency`,
    binds.values,
  );
  return summariseDeals(
    (pipelines as Pipeline[]).map((p) => ({
      id: p.id,
      name: p.name,
      isDefault: p.isDefault,
      stages: p.stages,
    })),
    rows,
  );
}

function listAllPipelines(workspaceId: WorkspaceId): Promise<Pipeline[]> {
  return Pipeline.findAll({
    where: { workspaceId },
    order: [
      ["isDefault", "DESC"],
      ["createdAt", "ASC"],
      ["id", "ASC"],
    ],
  });
}
