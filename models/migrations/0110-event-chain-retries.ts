import { Sequelize } from "sequelize";

/**
 * Events whose chain (spec 6.3) stopped at a failed step after the event was
 * stored: a step's service unreachable (a transporter outage, a node gone),
 * a timeout. `events.retryChains` runs each one's chain again at `run_at`
 * (every step is idempotent per event id) until it completes; a claim moves
 * `run_at` on by a lease, so a node that dies mid-retry leaves it to another.
 * Goes with its event (retention, a contact erased).
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE TABLE event_chain_retries (
      event_id     text PRIMARY KEY REFERENCES events(id) ON DELETE CASCADE,
      workspace_id text NOT NULL,
      attempts     integer NOT NULL DEFAULT 0,
      run_at       timestamptz NOT NULL,
      last_error   text NOT NULL,
      created_at   timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX event_chain_retries_due_idx ON event_chain_retries (run_at);
  `);
}
