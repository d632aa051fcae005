import { Sequelize } from "sequelize";

/** Dynamic content: per slot, variants chosen by a segment filter for the contact, else the default. */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE TABLE dynamic_content (
      id              text PRIMARY KEY,
      workspace_id    text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      name            text NOT NULL,
      slot            text NOT NULL,
      default_content text NOT NULL,
      variants        jsonb NOT NULL DEFAULT '[]',
      created_at      timestamptz NOT NULL DEFAULT now(),
      updated_at      timestamptz NOT NULL DEFAULT now(),
      CONSTRAINT dynamic_content_slot_uq UNIQUE (workspace_id, slot)
    );
  `);
}
