import { QueryTypes, Sequelize } from "sequelize";

/**
 * The claim index again with `endpoint_id COLLATE "C"`, and the claim's conditions on the endpoint written in
 * that collation, so no other index of `webhook_deliveries` can serve them. With the statistics of a young or
 * bursting queue (most rows queued when they were taken) the planner read the claim through
 * `webhook_deliveries_endpoint_idx` instead, every delivered row of the endpoint visited in the heap and filtered
 * out: a claim cost hundreds of ms and grew with the history. The ids are only grouped and compared, so "C" also
 * spares the locale-aware comparisons. Built CONCURRENTLY as 0037 was (see 0031), then the old index goes.
 * Skipped where the queue has its own table (0103, which runs first on a fresh database and drops these indexes).
 */
export async function up(sequelize: Sequelize): Promise<void> {
  const [queueTable] = await sequelize.query<{ found: boolean }>(
    `SELECT to_regclass('webhook_delivery_queue') IS NOT NULL AS found`,
    { type: QueryTypes.SELECT },
  );
  if (queueTable.found) return;
  const [invalid] = await sequelize.query(
    `SELECT 1 FROM pg_index WHERE indexrelid = to_regclass('webhook_deliveries_queue_idx') AND NOT indisvalid`,
  );
  if (invalid.length > 0) await sequelize.query(`DROP INDEX CONCURRENTLY webhook_deliveries_queue_idx`);
  await sequelize.query(
    `CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_deliveries_queue_idx
        ON webhook_deliveries ((endpoint_id COLLATE "C"), created_at, id)
      WHERE next_attempt_at IS NOT NULL AND direction = 'OUTBOUND'`,
  );
  await sequelize.query(`DROP INDEX CONCURRENTLY IF EXISTS webhook_deliveries_claim_age_idx`);
}
