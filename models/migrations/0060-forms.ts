import { Sequelize } from "sequelize";

/**
 * Forms: their fields and settings, each submission with its proof of
 * consent (address, user agent, the consent text shown, time), and views by
 * day for the conversion analytics. A contact's erasure takes its
 * submissions with it (they hold what the person typed).
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE TABLE forms (
      id           text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      name         text NOT NULL,
      active       boolean NOT NULL DEFAULT true,
      fields       jsonb NOT NULL,
      settings     jsonb NOT NULL,
      created_at   timestamptz NOT NULL DEFAULT now(),
      updated_at   timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX forms_workspace_idx ON forms (workspace_id, created_at DESC, id DESC);

    CREATE TABLE form_submissions (
      id           text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      form_id      text NOT NULL REFERENCES forms(id) ON DELETE CASCADE,
      contact_id   text REFERENCES contacts(id) ON DELETE CASCADE,
      fields       jsonb NOT NULL,
      page_url     text,
      -- Proof of consent: who asked (address, user agent) and what they were shown for each channel.
      ip           text,
      user_agent   text,
      consent      jsonb NOT NULL DEFAULT '[]',
      created_at   timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX form_submissions_form_idx ON form_submissions (form_id, created_at DESC, id DESC);
    CREATE INDEX form_submissions_contact_idx ON form_submissions (contact_id);

    CREATE TABLE form_views (
      form_id text NOT NULL REFERENCES forms(id) ON DELETE CASCADE,
      day     date NOT NULL,
      views   integer NOT NULL DEFAULT 0,
      PRIMARY KEY (form_id, day)
    );
  `);
}
