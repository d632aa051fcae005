import type { QueueFigures } from "../../lib/business-metrics";
import { database, queryAcrossWorkspaces } from "../../lib/database";
import { queueFigures, queueFiguresSql, type QueueFiguresRow } from "../../lib/queue-stats";

/** The queue of stored attachments whose message is gone (migration 0101 fills it from a trigger). */

export interface AttachmentRemoval {
  id: string;
  storage: "local" | "s3";
  storageKey: string;
}

/**
 * One batch of the queue (any workspace), claimed with FOR UPDATE SKIP LOCKED
 * so replicas never take the same rows, handed to `remove`, then deleted in
 * the same transaction: a pass that fails leaves its rows for the next one.
 * Answers how many rows were taken.
 */
export async function removeQueuedBatch(
  batchSize: number,
  remove: (rows: AttachmentRemoval[]) => Promise<void>,
): Promise<number> {
  const sequelize = await database();
  return sequelize.transaction(async (transaction) => {
    const rows = await queryAcrossWorkspaces<AttachmentRemoval>(
      `SELECT id, storage, storage_key AS "storageKey" FROM inbox_attachment_removals
        ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`,
      [batchSize],
      transaction,
    );
    if (!rows.length) return 0;
    await remove(rows);
    await queryAcrossWorkspaces(
      `DELETE FROM inbox_attachment_removals WHERE id = ANY($1::bigint[])`,
      [rows.map((r) => r.id)],
      transaction,
    );
    return rows.length;
  });
}

/** The queue's figures (lib/queue-stats.ts): every row is due from the moment its message went. */
export async function removalQueueFigures(): Promise<QueueFigures> {
  const [row] = await queryAcrossWorkspaces<QueueFiguresRow>(
    `SELECT ${queueFiguresSql("true", "queued_at")} FROM inbox_attachment_removals`,
    [],
  );
  return queueFigures("inbox_attachment_removals", row);
}
