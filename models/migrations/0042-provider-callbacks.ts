import { Sequelize } from "sequelize";

/**
 * Provider callbacks: the event ids already applied (providers retry a
 * callback until it is answered, so one may arrive twice), and callbacks
 * that arrived before the send they name was recorded, kept to be applied
 * when it is; and each workspace's channel commands (STOP, START, HELP and
 * its own), absent until first replaced.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE TABLE provider_event_log (
      provider_id text NOT NULL,
      event_id    text NOT NULL,
      created_at  timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (provider_id, event_id)
    );
    CREATE INDEX provider_event_log_created_idx ON provider_event_log (created_at);

    CREATE TABLE provider_callbacks_pending (
      id                  bigserial PRIMARY KEY,
      workspace_id        text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      provider_id         text NOT NULL,
      message_id          text,
      provider_message_id text,
      event               jsonb NOT NULL,
      created_at          timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX provider_callbacks_pending_message_idx ON provider_callbacks_pending (message_id) WHERE message_id IS NOT NULL;
    CREATE INDEX provider_callbacks_pending_provider_idx
      ON provider_callbacks_pending (provider_id, provider_message_id) WHERE provider_message_id IS NOT NULL;

    CREATE TABLE channel_commands (
      workspace_id text PRIMARY KEY REFERENCES workspaces(id) ON DELETE CASCADE,
      commands     jsonb NOT NULL,
      updated_at   timestamptz NOT NULL DEFAULT now()
    );
  `);
}
