import { Sequelize } from "sequelize";

/**
 * Scoring rules and score history. `(rule_id, event_id)` is unique, so a
 * retried event never scores twice; manual adjustments have neither.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE TABLE scoring_rules (
      id               text PRIMARY KEY,
      workspace_id     text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      name             text NOT NULL,
      event_type       text NOT NULL,
      "where"          jsonb,
      points           integer NOT NULL,
      max_per_contact  integer,
      period_days      integer,
      max_per_period   integer,
      active           boolean NOT NULL DEFAULT true,
      created_at       timestamptz NOT NULL DEFAULT now(),
      updated_at       timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX scoring_rules_event_idx ON scoring_rules (workspace_id, event_type) WHERE active;
    CREATE INDEX scoring_rules_workspace_idx ON scoring_rules (workspace_id, created_at DESC, id DESC);

    CREATE TABLE score_history (
      id           text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      contact_id   text NOT NULL REFERENCES contacts(id) ON DELETE CASCADE,
      points       integer NOT NULL,
      rule_id      text REFERENCES scoring_rules(id) ON DELETE SET NULL,
      event_id     text,
      event_at     timestamptz,
      reason       text,
      created_at   timestamptz NOT NULL DEFAULT now()
    );
    CREATE UNIQUE INDEX score_history_rule_event_uq ON score_history (rule_id, event_id);
    CREATE INDEX score_history_contact_idx ON score_history (contact_id, created_at DESC, id DESC);
    CREATE INDEX score_history_rule_contact_idx ON score_history (rule_id, contact_id, event_at);
  `);
}
