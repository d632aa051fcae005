import { Sequelize } from "sequelize";

/**
 * The membership log's cause per contact: evaluations of many contacts share
 * one transaction (one per batch of events), so the causing event is read from
 * the transaction-local map `segments.causes` (contact id → event id) instead
 * of the single `segments.event_id`.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE OR REPLACE FUNCTION segments_cause(contact_id text) RETURNS text LANGUAGE sql STABLE AS $fn$
      SELECT NULLIF(current_setting('segments.causes', true), '')::jsonb ->> contact_id
    $fn$;
    CREATE OR REPLACE FUNCTION segments_log_entries() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      INSERT INTO segment_membership_log (workspace_id, segment_id, contact_id, change, event_id, created_at)
      SELECT s.workspace_id, n.segment_id, n.contact_id, 'entered', segments_cause(n.contact_id), now()
        FROM new_rows n JOIN segments s ON s.id = n.segment_id;
      RETURN NULL;
    END $fn$;
    CREATE OR REPLACE FUNCTION segments_log_exits() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      INSERT INTO segment_membership_log (workspace_id, segment_id, contact_id, change, event_id, created_at)
      SELECT s.workspace_id, o.segment_id, o.contact_id, 'exited', segments_cause(o.contact_id), now()
        FROM old_rows o JOIN segments s ON s.id = o.segment_id;
      RETURN NULL;
    END $fn$;
  `);
}
