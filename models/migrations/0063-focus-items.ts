import { Sequelize } from "sequelize";

/** On-site widgets (bars, modals, slide-ins) with their trigger and display rules, delivered by the website script. */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE TABLE focus_items (
      id           text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      name         text NOT NULL,
      type         text NOT NULL CHECK (type IN ('bar', 'modal', 'slide_in')),
      content      text NOT NULL,
      form_id      text REFERENCES forms(id) ON DELETE SET NULL,
      trigger      jsonb NOT NULL,
      rules        jsonb NOT NULL DEFAULT '{}',
      active       boolean NOT NULL DEFAULT true,
      created_at   timestamptz NOT NULL DEFAULT now(),
      updated_at   timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX focus_items_workspace_idx ON focus_items (workspace_id, created_at DESC, id DESC);
  `);
}
