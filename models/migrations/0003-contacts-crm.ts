import { Sequelize } from "sequelize";

/** Contacts area: lifecycle stages, notes, stage history, do-not-contact, one-time link tokens, extra contact indexes. */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE TABLE lifecycle_stages (
      id           text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      key          text NOT NULL,
      name         text NOT NULL,
      position     integer NOT NULL DEFAULT 0,
      color        text,
      created_at   timestamptz NOT NULL DEFAULT now(),
      updated_at   timestamptz NOT NULL DEFAULT now(),
      UNIQUE (workspace_id, key)
    );

    CREATE TABLE contact_notes (
      id           text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      contact_id   text NOT NULL REFERENCES contacts(id) ON DELETE CASCADE,
      author_type  text NOT NULL,
      author_id    text,
      body         text NOT NULL,
      created_at   timestamptz NOT NULL DEFAULT now(),
      updated_at   timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX contact_notes_contact_idx ON contact_notes (contact_id, created_at DESC, id DESC);

    CREATE TABLE contact_stage_history (
      id           text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      contact_id   text NOT NULL REFERENCES contacts(id) ON DELETE CASCADE,
      from_stage   text,
      to_stage     text,
      reason       text,
      changed_by_type text NOT NULL,
      changed_by_id   text,
      created_at   timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX contact_stage_history_contact_idx ON contact_stage_history (contact_id, created_at DESC, id DESC);

    CREATE TABLE dnc_entries (
      id           text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      type         text NOT NULL CHECK (type IN ('email', 'phone')),
      value        text NOT NULL,
      reason       text,
      created_by   text,
      created_at   timestamptz NOT NULL DEFAULT now(),
      UNIQUE (workspace_id, type, value)
    );
    CREATE INDEX dnc_entries_list_idx ON dnc_entries (workspace_id, created_at DESC, id DESC);

    CREATE TABLE contact_link_tokens (
      id           text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      contact_id   text NOT NULL REFERENCES contacts(id) ON DELETE CASCADE,
      channel      text NOT NULL,
      token_hash   text NOT NULL UNIQUE,
      expires_at   timestamptz NOT NULL,
      used_at      timestamptz,
      created_at   timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX contact_link_tokens_contact_idx ON contact_link_tokens (contact_id);

    CREATE INDEX contacts_phone_idx ON contacts (workspace_id, phone) WHERE phone IS NOT NULL;
    CREATE INDEX contacts_stage_idx ON contacts (workspace_id, stage);
    CREATE INDEX contacts_geo_idx ON contacts (workspace_id, country, city);
    CREATE INDEX contacts_attributes_idx ON contacts USING gin (attributes jsonb_path_ops);
    CREATE INDEX contacts_name_trgm_idx ON contacts USING gin (
      (lower(coalesce(first_name, '') || ' ' || coalesce(last_name, ''))) gin_trgm_ops
    );
  `);
}
