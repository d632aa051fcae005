import { Sequelize } from "sequelize";

/** Typed custom contact fields and their groups; values live in `contacts.custom_fields` keyed by `key`. */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE TABLE custom_field_groups (
      id           text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      name         text NOT NULL,
      position     integer NOT NULL DEFAULT 0,
      created_at   timestamptz NOT NULL DEFAULT now(),
      updated_at   timestamptz NOT NULL DEFAULT now(),
      UNIQUE (workspace_id, name)
    );

    CREATE TABLE custom_fields (
      id           text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      key          text NOT NULL,
      label        text NOT NULL,
      type         text NOT NULL CHECK (type IN ('text', 'number', 'date', 'boolean', 'select', 'multi-select')),
      options      jsonb NOT NULL DEFAULT '[]'::jsonb,
      group_id     text REFERENCES custom_field_groups(id) ON DELETE SET NULL,
      required     boolean NOT NULL DEFAULT false,
      position     integer NOT NULL DEFAULT 0,
      created_at   timestamptz NOT NULL DEFAULT now(),
      updated_at   timestamptz NOT NULL DEFAULT now(),
      UNIQUE (workspace_id, key)
    );
  `);
}
