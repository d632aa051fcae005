import { Sequelize } from "sequelize";

/**
 * Each push message's outcome per subscription of its contact (accepted,
 * gone, failed, or skipped when the subscription's provider type is not
 * configured), one row per subscription and attempt: one dead browser never
 * fails the others, and `GET {ws}/messages/{id}` shows them as `deliveries`.
 * The subscription id is kept as it was (a removed subscription keeps its
 * history); the rows go with their message.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE TABLE push_deliveries (
      id                  text PRIMARY KEY,
      workspace_id        text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      message_id          text NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
      subscription_id     text NOT NULL,
      subscription_type   text NOT NULL,
      attempt             integer NOT NULL,
      provider_type       text,
      provider_id         text,
      status              text NOT NULL CHECK (status IN ('accepted', 'gone', 'failed', 'skipped')),
      code                text,
      provider_message_id text,
      created_at          timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX push_deliveries_message_idx ON push_deliveries (message_id);
    CREATE INDEX push_subscriptions_active_contact_idx ON push_subscriptions (workspace_id, contact_id) WHERE active;
  `);
}
