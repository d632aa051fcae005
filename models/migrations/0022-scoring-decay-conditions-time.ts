import { Sequelize } from "sequelize";

/**
 * Score decay, scoring rules on a contact condition, and time-relative
 * segments refreshed as time passes.
 * - A rule has exactly one of `event_type` and `condition`; `decay_days`
 *   makes an event rule's points expire that many days after the event.
 * - A history entry that will expire carries `decays_at`; its expiry is a
 *   negative entry whose `decay_of` names it (unique: never expired twice),
 *   and `decayed_at` takes it out of the due index.
 * - `scoring_rule_matches` holds the contacts that currently hold a
 *   condition rule's points (one row per rule and contact).
 * - `segments.time_relative` (filter reads the clock) and `next_refresh_at`
 *   (when a replica may claim its refresh), backfilled for existing rows.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    ALTER TABLE scoring_rules ALTER COLUMN event_type DROP NOT NULL;
    ALTER TABLE scoring_rules
      ADD COLUMN condition             jsonb,
      ADD COLUMN condition_event_types text[] NOT NULL DEFAULT '{}',
      ADD COLUMN decay_days            integer CHECK (decay_days > 0);
    ALTER TABLE scoring_rules
      ADD CONSTRAINT scoring_rules_kind_ck CHECK ((event_type IS NULL) <> (condition IS NULL));

    ALTER TABLE score_history
      ADD COLUMN decays_at  timestamptz,
      ADD COLUMN decayed_at timestamptz,
      ADD COLUMN decay_of   text REFERENCES score_history(id) ON DELETE CASCADE;
    CREATE UNIQUE INDEX score_history_decay_of_uq ON score_history (decay_of);
    CREATE INDEX score_history_decay_due_idx ON score_history (decays_at)
      WHERE decays_at IS NOT NULL AND decayed_at IS NULL;

    CREATE TABLE scoring_rule_matches (
      rule_id      text NOT NULL REFERENCES scoring_rules(id) ON DELETE CASCADE,
      contact_id   text NOT NULL REFERENCES contacts(id) ON DELETE CASCADE,
      workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      points       integer NOT NULL,
      matched_at   timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (rule_id, contact_id)
    );
    CREATE INDEX scoring_rule_matches_contact_idx ON scoring_rule_matches (contact_id);
    CREATE INDEX scoring_rule_matches_workspace_idx ON scoring_rule_matches (workspace_id);

    ALTER TABLE segments
      ADD COLUMN time_relative   boolean NOT NULL DEFAULT false,
      ADD COLUMN next_refresh_at timestamptz;
    UPDATE segments SET time_relative = true, next_refresh_at = now()
     WHERE type = 'dynamic' AND filter @? '$.** ? (@.operator == "within_last" || exists(@.within))';
    CREATE INDEX segments_refresh_due_idx ON segments (next_refresh_at) WHERE time_relative;
  `);
}
