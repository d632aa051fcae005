import { Sequelize } from "sequelize";

/**
 * Segment entered/exited triggers enroll from the membership log, which the
 * membership triggers write in the transaction of each change, so no entry
 * or exit is lost to a crash or a network split. Each log row now records
 * its transaction (`txid`); a reader takes the rows of transactions older
 * than the oldest one still running (`pg_snapshot_xmin`), which can no
 * longer gain rows, and keeps that horizon as its cursor. Rows logged before
 * this migration keep no txid and are history. An enrollment may name what
 * caused it (`source_key`), so the chain and the log reader never enroll
 * one change twice.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    ALTER TABLE segment_membership_log ADD COLUMN txid xid8;
    ALTER TABLE segment_membership_log ALTER COLUMN txid SET DEFAULT pg_current_xact_id();
    CREATE INDEX segment_membership_log_txid_idx ON segment_membership_log (txid, id) WHERE txid IS NOT NULL;
    CREATE INDEX segment_membership_log_event_idx ON segment_membership_log (event_id) WHERE event_id IS NOT NULL;

    CREATE TABLE campaign_cursors (
      name       text PRIMARY KEY,
      position   xid8 NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now()
    );

    ALTER TABLE campaign_enrollments ADD COLUMN source_key text;
    CREATE UNIQUE INDEX campaign_enrollments_source_idx ON campaign_enrollments (campaign_id, source_key)
      WHERE source_key IS NOT NULL;
  `);
}
