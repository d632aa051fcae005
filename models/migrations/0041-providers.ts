import { Sequelize } from "sequelize";

/**
 * Email and SMS providers per workspace (credentials sealed inside `config`),
 * one default per channel, and the segment count a provider reports for a
 * message.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE TABLE providers (
      id           text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      channel      text NOT NULL CHECK (channel IN ('email', 'sms')),
      type         text NOT NULL,
      name         text NOT NULL,
      is_default   boolean NOT NULL DEFAULT false,
      -- Failover order after the default: lower first.
      priority     integer NOT NULL DEFAULT 0,
      -- The type's settings; secret fields sealed (lib/secret-box).
      config       jsonb NOT NULL,
      created_at   timestamptz NOT NULL DEFAULT now(),
      updated_at   timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX providers_workspace_idx ON providers (workspace_id, channel, created_at, id);
    CREATE UNIQUE INDEX providers_default_idx ON providers (workspace_id, channel) WHERE is_default;

    ALTER TABLE messages ADD COLUMN segments integer;
  `);
}
