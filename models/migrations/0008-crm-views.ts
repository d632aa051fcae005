import { Sequelize } from "sequelize";

/** Saved list views and dashboard widgets, both owned by one user of one workspace. */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE TABLE saved_views (
      id           text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      user_id      text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      resource     text NOT NULL,
      name         text NOT NULL,
      filters      jsonb NOT NULL DEFAULT '{}'::jsonb,
      sort         text,
      columns      text[] NOT NULL DEFAULT '{}',
      shared       boolean NOT NULL DEFAULT false,
      created_at   timestamptz NOT NULL DEFAULT now(),
      updated_at   timestamptz NOT NULL DEFAULT now()
    );
    CREATE UNIQUE INDEX saved_views_name_uq ON saved_views (workspace_id, user_id, resource, lower(name));
    CREATE INDEX saved_views_shared_idx ON saved_views (workspace_id, resource) WHERE shared;

    CREATE TABLE dashboard_widgets (
      id           text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      user_id      text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      type         text NOT NULL,
      title        text NOT NULL,
      config       jsonb NOT NULL DEFAULT '{}'::jsonb,
      position     jsonb NOT NULL DEFAULT '{}'::jsonb,
      created_at   timestamptz NOT NULL DEFAULT now(),
      updated_at   timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX dashboard_widgets_user_idx ON dashboard_widgets (workspace_id, user_id, created_at);
  `);
}
