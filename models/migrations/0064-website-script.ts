import { Sequelize } from "sequelize";

/**
 * The website script: each workspace's public `siteKey` (`pk_` + 24
 * characters, read-only; existing workspaces get theirs from the same
 * default as new ones), and anonymous events found by their session, which
 * become the contact's when the visitor is identified.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    ALTER TABLE workspaces ADD COLUMN site_key text NOT NULL DEFAULT ('pk_' || substr(md5(gen_random_uuid()::text), 1, 24));
    CREATE UNIQUE INDEX workspaces_site_key_uq ON workspaces (site_key);
    CREATE INDEX events_anonymous_session_idx ON events (workspace_id, session_id)
      WHERE contact_id IS NULL AND session_id IS NOT NULL;
  `);
}
