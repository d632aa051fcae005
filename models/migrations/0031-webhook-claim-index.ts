import { Sequelize } from "sequelize";

/**
 * The dispatcher's claim reads each endpoint's due deliveries oldest first
 * through `(endpoint_id, next_attempt_at)`, so a failing endpoint's backlog
 * is never read past. It replaces the index on `next_attempt_at` alone: with
 * both, the planner takes the old one for "this endpoint's oldest rows" and
 * scans the whole queue when one endpoint's backlog sits at its head.
 *
 * Built CONCURRENTLY (migrations run outside a transaction, one statement
 * each) so replicas still running keep writing deliveries meanwhile. A build
 * that was interrupted leaves an invalid index that IF NOT EXISTS would keep:
 * it is dropped and built again.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  const [invalid] = await sequelize.query(
    `SELECT 1 FROM pg_index WHERE indexrelid = to_regclass('webhook_deliveries_claim_idx') AND NOT indisvalid`,
  );
  if (invalid.length > 0) await sequelize.query(`DROP INDEX CONCURRENTLY webhook_deliveries_claim_idx`);
  await sequelize.query(
    `CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_deliveries_claim_idx ON webhook_deliveries (endpoint_id, next_attempt_at)
      WHERE next_attempt_at IS NOT NULL AND direction = 'OUTBOUND'`,
  );
  await sequelize.query(`DROP INDEX CONCURRENTLY IF EXISTS webhook_deliveries_due_idx`);
}
