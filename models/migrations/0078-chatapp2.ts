import { Sequelize } from "sequelize";

/**
 * chatapp2 (WhatsApp Cloud wire): the account's approved message templates
 * as last synced (a template send is checked against them before it is
 * queued), and when each phone last wrote to the workspace (the 24-hour
 * customer-service window a free-form message must fall in).
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE TABLE chatapp2_templates (
      workspace_id    text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      provider_id     text NOT NULL REFERENCES providers(id) ON DELETE CASCADE,
      name            text NOT NULL,
      language        text NOT NULL,
      category        text NOT NULL,
      parameter_count integer NOT NULL,
      components      jsonb NOT NULL DEFAULT '[]',
      synced_at       timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (workspace_id, name, language)
    );
    CREATE INDEX chatapp2_templates_provider_idx ON chatapp2_templates (provider_id);
    CREATE TABLE chatapp2_windows (
      workspace_id    text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      phone           text NOT NULL,
      last_inbound_at timestamptz NOT NULL,
      PRIMARY KEY (workspace_id, phone)
    );
  `);
}
