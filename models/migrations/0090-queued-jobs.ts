import { Sequelize } from "sequelize";

/**
 * A job can be queued in its caller's transaction (a claimed report run and
 * its delivery commit together) and started afterwards by its owner: `input`
 * is what the work needs to start, and the owner takes its queued jobs by
 * type, oldest first.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    ALTER TABLE jobs ADD COLUMN input jsonb;
    CREATE INDEX jobs_queued_idx ON jobs (type, created_at) WHERE status = 'queued';
  `);
}
