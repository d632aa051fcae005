import { Sequelize } from "sequelize";

/**
 * The claim takes each endpoint's due deliveries oldest first by age
 * (`created_at`), not by due time: a retry keeps its place ahead of the
 * deliveries queued after it. Ordered by due time, a retry (due a few
 * seconds after its failure) sat behind every first attempt of a backlog, so
 * an endpoint that fails first attempts only probed first attempts and never
 * got one through. Built CONCURRENTLY as 0031 was (see there), then the old
 * index goes.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  const [invalid] = await sequelize.query(
    `SELECT 1 FROM pg_index WHERE indexrelid = to_regclass('webhook_deliveries_claim_age_idx') AND NOT indisvalid`,
  );
  if (invalid.length > 0) await sequelize.query(`DROP INDEX CONCURRENTLY webhook_deliveries_claim_age_idx`);
  await sequelize.query(
    `CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_deliveries_claim_age_idx ON webhook_deliveries (endpoint_id, created_at, id)
      WHERE next_attempt_at IS NOT NULL AND direction = 'OUTBOUND'`,
  );
  await sequelize.query(`DROP INDEX CONCURRENTLY IF EXISTS webhook_deliveries_claim_idx`);
}
