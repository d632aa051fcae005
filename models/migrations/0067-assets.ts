import { Sequelize } from "sequelize";

/**
 * Downloadable files (stored on local disk or S3-compatible storage, the row
 * keeps where) or links to remote ones, in categories; `gated` ones need a
 * link token, which a gating form's submission hands out.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE TABLE asset_categories (
      id           text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      name         text NOT NULL,
      created_at   timestamptz NOT NULL DEFAULT now()
    );
    CREATE UNIQUE INDEX asset_categories_name_uq ON asset_categories (workspace_id, lower(name));

    CREATE TABLE assets (
      id            text PRIMARY KEY,
      workspace_id  text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      category_id   text REFERENCES asset_categories(id) ON DELETE SET NULL,
      name          text NOT NULL,
      file_name     text,
      content_type  text,
      size          bigint,
      storage       text CHECK (storage IN ('local', 's3')),
      storage_key   text,
      remote_url    text,
      gated         boolean NOT NULL DEFAULT false,
      downloads     integer NOT NULL DEFAULT 0,
      created_at    timestamptz NOT NULL DEFAULT now(),
      updated_at    timestamptz NOT NULL DEFAULT now(),
      CHECK ((storage_key IS NULL) <> (remote_url IS NULL))
    );
    CREATE INDEX assets_workspace_idx ON assets (workspace_id, created_at DESC, id DESC);
    CREATE INDEX assets_category_idx ON assets (category_id) WHERE category_id IS NOT NULL;
  `);
}
