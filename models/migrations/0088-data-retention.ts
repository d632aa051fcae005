import { Sequelize } from "sequelize";

/**
 * Data retention (contract-messaging 12). The purge deletes each kind's rows
 * older than a cutoff in small batches, each batch picked oldest first from an
 * index on (workspace_id, time): events, messages and webhook deliveries have
 * one already (their list indexes); form submissions get theirs here, built
 * CONCURRENTLY (migrations run outside a transaction, one statement each) so
 * replicas still running keep taking submissions. An interrupted build leaves
 * an invalid index that IF NOT EXISTS would keep: it is dropped and built again.
 *
 * `retention_runs` holds each workspace's last purge day (UTC): the daily
 * step claims a workspace by moving it forward, once per day across replicas.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  const [invalid] = await sequelize.query(
    `SELECT 1 FROM pg_index WHERE indexrelid = to_regclass('form_submissions_workspace_time_idx') AND NOT indisvalid`,
  );
  if (invalid.length > 0)
    await sequelize.query(`DROP INDEX CONCURRENTLY form_submissions_workspace_time_idx`);
  await sequelize.query(
    `CREATE INDEX CONCURRENTLY IF NOT EXISTS form_submissions_workspace_time_idx
       ON form_submissions (workspace_id, created_at, id)`,
  );
  await sequelize.query(
    `CREATE TABLE IF NOT EXISTS retention_runs (
       workspace_id text PRIMARY KEY REFERENCES workspaces(id) ON DELETE CASCADE,
       last_run_on date NOT NULL
     )`,
  );
}
