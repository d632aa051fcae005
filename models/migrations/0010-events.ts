import { Sequelize } from "sequelize";

/** Recorded activity events (spec 6.3); newest-first lists per workspace, per contact and per type. */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE TABLE events (
      id            text PRIMARY KEY,
      workspace_id  text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      contact_id    text REFERENCES contacts(id) ON DELETE CASCADE,
      type          text NOT NULL,
      metadata      jsonb NOT NULL DEFAULT '{}'::jsonb,
      session_id    text,
      page_url      text,
      referrer      text,
      utm_source    text,
      utm_medium    text,
      utm_campaign  text,
      timestamp     timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX events_workspace_time_idx ON events (workspace_id, timestamp DESC, id DESC);
    CREATE INDEX events_contact_time_idx ON events (contact_id, timestamp DESC) WHERE contact_id IS NOT NULL;
    CREATE INDEX events_type_time_idx ON events (workspace_id, type, timestamp DESC);
  `);
}
