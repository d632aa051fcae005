import { type Transaction } from "sequelize";
import { newId } from "../../lib/crypto";
import { database, query, uniqueViolation } from "../../lib/database";
import { conflict } from "../../lib/errors";
import { Pipeline, type PipelineStage } from "../../models";
import { buildStages, DEFAULT_STAGES, statusOfStage, type StageInput } from "./crm.rules";
import type { WorkspaceId } from "../../lib/tenancy";

/** Every query on pipelines; each takes the workspace id first. */

export const pipelineView = (p: Pipeline) => ({
  id: p.id,
  name: p.name,
  isDefault: p.isDefault,
  stages: p.stages.map((s, position) => ({ ...s, position })),
  createdAt: p.createdAt,
  updatedAt: p.updatedAt,
});
export type PipelineView = ReturnType<typeof pipelineView>;

async function saving<T>(work: () => Promise<T>, name: string | undefined): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (uniqueViolation(err)) throw conflict(`A pipeline named '${name}' exists`);
    throw err;
  }
}

export async function listPipelines(workspaceId: WorkspaceId): Promise<PipelineView[]> {
  await defaultPipeline(workspaceId);
  const rows = await Pipeline.findAll({
    where: { workspaceId },
    order: [
      ["isDefault", "DESC"],
      ["createdAt", "ASC"],
      ["id", "ASC"],
    ],
  });
  return rows.map(pipelineView);
}

export async function findPipeline(
  workspaceId: WorkspaceId,
  pipelineId: string,
  transaction?: Transaction,
): Promise<Pipeline | null> {
  return Pipeline.findOne({ where: { id: pipelineId, workspaceId }, transaction });
}

/**
 * The workspace's default pipeline, made with the usual sales stages the
 * first time a workspace needs one. Two replicas racing here both end with
 * the same row (the unique index on the default keeps one).
 */
export async function defaultPipeline(
  workspaceId: WorkspaceId,
  transaction?: Transaction,
): Promise<Pipeline> {
  const found = await Pipeline.findOne({ where: { workspaceId, isDefault: true }, transaction });
  if (found) return found;
  const { stages } = buildStages(DEFAULT_STAGES, [], newId);
  await query(
    workspaceId,
    `INSERT INTO pipelines (id, workspace_id, name, stages, is_default)
     SELECT $2, $1, 'Sales pipeline', CAST($3 AS jsonb), true
      WHERE NOT EXISTS (SELECT 1 FROM pipelines WHERE workspace_id = $1 AND lower(name) = 'sales pipeline')
     ON CONFLICT DO NOTHING`,
    [newId(), JSON.stringify(stages)],
    transaction,
  );
  const made = await Pipeline.findOne({ where: { workspaceId, isDefault: true }, transaction });
  if (made) return made;
  // A pipeline named like the default exists but is not the default: promote the oldest pipeline.
  const oldest = await Pipeline.findOne({
    where: { workspaceId },
    order: [
      ["createdAt", "ASC"],
      ["id", "ASC"],
    ],
    transaction,
  });
  if (!oldest) throw new Error("No pipeline to make the default, though one is named like it");
  oldest.isDefault = true;
  return oldest.save({ transaction });
}

export async function createPipeline(
  workspaceId: WorkspaceId,
  input: { name: string; stages: StageInput[]; isDefault?: boolean },
) {
  const sequelize = await database();
  const { stages } = buildStages(input.stages, [], newId);
  return saving(
    () =>
      sequelize.transaction(async (transaction) => {
        const hasDefault = await Pipeline.count({ where: { workspaceId, isDefault: true }, transaction });
        const isDefault = input.isDefault === true || hasDefault === 0;
        if (isDefault && hasDefault)
          await Pipeline.update(
            { isDefault: false },
            { where: { workspaceId, isDefault: true }, transaction },
          );
        const pipeline = await Pipeline.create(
          { id: newId(), workspaceId, name: input.name, stages, isDefault },
          { transaction },
        );
        return pipelineView(pipeline);
      }),
    input.name,
  );
}

/**
 * Rename, make default, or replace the ordered stages. A stage that still
 * holds deals cannot be removed (409); deals in a stage whose won/lost flag
 * changed take the stage's new status at once. Null: no such pipeline.
 */
export async function updatePipeline(
  workspaceId: WorkspaceId,
  pipelineId: string,
  input: { name?: string; stages?: StageInput[]; isDefault?: true },
) {
  const sequelize = await database();
  return saving(
    () =>
      sequelize.transaction(async (transaction) => {
        const pipeline = await Pipeline.findOne({
          where: { id: pipelineId, workspaceId },
          transaction,
          lock: transaction.LOCK.UPDATE,
        });
        if (!pipeline) return null;
        if (input.name !== undefined) pipeline.name = input.name;
        if (input.isDefault && !pipeline.isDefault) {
          await Pipeline.update(
            { isDefault: false },
            { where: { workspaceId, isDefault: true }, transaction },
          );
          pipeline.isDefault = true;
        }
        if (input.stages) {
          const { stages, removedIds } = buildStages(input.stages, pipeline.stages, newId);
          if (removedIds.length) await refuseStagesWithDeals(workspaceId, pipeline, removedIds, transaction);
          pipeline.stages = stages;
          pipeline.changed("stages", true);
          await syncDealStatuses(workspaceId, pipeline.id, stages, transaction);
        }
        pipeline.changed("updatedAt", true);
        return pipelineView(await pipeline.save({ transaction }));
      }),
    input.name,
  );
}

async function refuseStagesWithDeals(
  workspaceId: WorkspaceId,
  pipeline: Pipeline,
  stageIds: string[],
  transaction: Transaction,
) {
  const rows = await query<{ stage_id: string; n: string }>(
    workspaceId,
    `SELECT stage_id, count(*) AS n FROM deals WHERE workspace_id = $1 AND pipeline_id = $2
        AND stage_id = ANY($3::text[]) GROUP BY stage_id`,
    [pipeline.id, stageIds],
    transaction,
  );
  if (rows.length) {
    const name = pipeline.stages.find((s) => s.id === rows[0].stage_id)?.name ?? rows[0].stage_id;
    throw conflict(
      `The stage '${name}' still holds ${rows[0].n} deal(s); move them before removing the stage`,
    );
  }
}

async function syncDealStatuses(
  workspaceId: WorkspaceId,
  pipelineId: string,
  stages: PipelineStage[],
  transaction: Transaction,
) {
  await query(
    workspaceId,
    `UPDATE deals d
        SET status = s.status,
            closed_at = CASE WHEN s.status = 'open' THEN NULL ELSE coalesce(d.closed_at, now()) END,
            updated_at = now()
       FROM jsonb_to_recordset(CAST($3 AS jsonb)) AS s(id text, status text)
      WHERE d.workspace_id = $1 AND d.pipeline_id = $2 AND d.stage_id = s.id AND d.status <> s.status`,
    [pipelineId, JSON.stringify(stages.map((s) => ({ id: s.id, status: statusOfStage(s) })))],
    transaction,
  );
}

/**
 * A pipeline that still holds deals cannot be deleted (409). The oldest other
 * pipeline becomes the default. False: no such pipeline.
 */
export async function deletePipeline(workspaceId: WorkspaceId, pipelineId: string): Promise<boolean> {
  const sequelize = await database();
  return sequelize.transaction(async (transaction) => {
    const pipeline = await Pipeline.findOne({
      where: { id: pipelineId, workspaceId },
      transaction,
      lock: transaction.LOCK.UPDATE,
    });
    if (!pipeline) return false;
    const [{ n }] = await query<{ n: string }>(
      workspaceId,
      `SELECT count(*) AS n FROM deals WHERE workspace_id = $1 AND pipeline_id = $2`,
      [pipelineId],
      transaction,
    );
    if (Number(n) > 0) throw conflict(`The pipeline still holds ${n} deal(s); move or delete them first`);
    await pipeline.destroy({ transaction });
    if (pipeline.isDefault) {
      const next = await Pipeline.findOne({
        where: { workspaceId },
        order: [
          ["createdAt", "ASC"],
          ["id", "ASC"],
        ],
        transaction,
      });
      if (next) await next.update({ isDefault: true }, { transaction });
    }
    return true;
  });
}
