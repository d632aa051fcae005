import { Sequelize } from "sequelize";

/** Contacts: the first workspace resource. Email unique per workspace (stored lower-cased). */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE TABLE contacts (
      id            text PRIMARY KEY,
      workspace_id  text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      email         text,
      phone         text,
      first_name    text,
      last_name     text,
      external_id   text,
      locale        text,
      timezone      text,
      country       text,
      city          text,
      tags          text[] NOT NULL DEFAULT '{}',
      attributes    jsonb NOT NULL DEFAULT '{}'::jsonb,
      custom_fields jsonb NOT NULL DEFAULT '{}'::jsonb,
      stage         text,
      score         integer NOT NULL DEFAULT 0,
      company_id    text,
      owner_id      text,
      consent       jsonb NOT NULL DEFAULT '{}'::jsonb,
      created_at    timestamptz NOT NULL DEFAULT now(),
      updated_at    timestamptz NOT NULL DEFAULT now(),
      CHECK (email IS NOT NULL OR phone IS NOT NULL OR external_id IS NOT NULL)
    );
    CREATE UNIQUE INDEX contacts_email_uq ON contacts (workspace_id, email) WHERE email IS NOT NULL;
    CREATE UNIQUE INDEX contacts_external_id_uq ON contacts (workspace_id, external_id) WHERE external_id IS NOT NULL;
    CREATE INDEX contacts_created_idx ON contacts (workspace_id, created_at DESC, id DESC);
    CREATE INDEX contacts_tags_idx ON contacts USING gin (tags);
    CREATE INDEX contacts_search_idx ON contacts USING gin (
      (coalesce(email, '') || ' ' || coalesce(first_name, '') || ' ' || coalesce(last_name, '') || ' ' || coalesce(phone, ''))
      gin_trgm_ops
    );
  `);
}
