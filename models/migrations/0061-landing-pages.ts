import { Sequelize } from "sequelize";

/** Landing pages: workspace-written HTML served at /p/{workspaceSlug}/{slug} while published. */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE TABLE landing_pages (
      id           text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      name         text NOT NULL,
      slug         text NOT NULL,
      title        text NOT NULL,
      html         text NOT NULL,
      status       text NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'published')),
      published_at timestamptz,
      views        integer NOT NULL DEFAULT 0,
      created_at   timestamptz NOT NULL DEFAULT now(),
      updated_at   timestamptz NOT NULL DEFAULT now(),
      CONSTRAINT landing_pages_slug_uq UNIQUE (workspace_id, slug)
    );
    CREATE INDEX landing_pages_workspace_idx ON landing_pages (workspace_id, created_at DESC, id DESC);
  `);
}
