import { Sequelize } from "sequelize";

/**
 * Sessions end on the server: a signed-out session's id is remembered until
 * its token would have expired anyway, and a password reset refuses every
 * token of the user issued before it. Inbound webhook replays are remembered
 * for days now, so their prune needs an index on the age.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE TABLE revoked_sessions (
      session_id  text PRIMARY KEY,
      user_id     text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      expires_at  timestamptz NOT NULL
    );
    CREATE INDEX revoked_sessions_expires_idx ON revoked_sessions (expires_at);
    ALTER TABLE users ADD COLUMN sessions_valid_after timestamptz;
    CREATE INDEX webhook_inbound_replays_received_idx ON webhook_inbound_replays (received_at);
  `);
}
