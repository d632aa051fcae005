import { Sequelize } from "sequelize";

/**
 * Templates (with translations and A/B variants), messages (the one send
 * path's durable queue and record), short links with their clicks, and
 * idempotency keys for POSTs that clients retry.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE TABLE templates (
      id           text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      name         text NOT NULL,
      channel      text NOT NULL CHECK (channel IN ('email', 'sms', 'push', 'chatapp1', 'chatapp2')),
      locale       text NOT NULL,
      content      jsonb NOT NULL,
      tags         text[] NOT NULL DEFAULT '{}',
      -- {variants: [{id, weight, content}], metric, winner}; null: no A/B test.
      ab           jsonb,
      created_at   timestamptz NOT NULL DEFAULT now(),
      updated_at   timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX templates_workspace_idx ON templates (workspace_id, created_at DESC, id DESC);

    CREATE TABLE template_translations (
      template_id  text NOT NULL REFERENCES templates(id) ON DELETE CASCADE,
      workspace_id text NOT NULL,
      locale       text NOT NULL,
      content      jsonb NOT NULL,
      created_at   timestamptz NOT NULL DEFAULT now(),
      updated_at   timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (template_id, locale)
    );

    -- No foreign key to contacts: GDPR erase and merge handle a contact's messages themselves,
    -- and a send's hot path should not pay a check per row.
    CREATE TABLE messages (
      id                  text PRIMARY KEY,
      workspace_id        text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      contact_id          text,
      channel             text NOT NULL,
      status              text NOT NULL,
      reason              text,
      to_address          text NOT NULL,
      template_id         text,
      variant             text,
      locale              text,
      campaign_id         text,
      enrollment_id       text,
      topic               text,
      transactional       boolean NOT NULL DEFAULT false,
      provider_id         text,
      provider_type       text,
      provider_message_id text,
      -- The inline content of a send without a template; after the render, what was sent.
      content             jsonb,
      variables           jsonb NOT NULL DEFAULT '{}',
      send_at             timestamptz NOT NULL DEFAULT now(),
      sent_at             timestamptz,
      delivered_at        timestamptz,
      opened_at           timestamptz,
      clicked_at          timestamptz,
      opens               integer NOT NULL DEFAULT 0,
      clicks              integer NOT NULL DEFAULT 0,
      error               text,
      attempts            integer NOT NULL DEFAULT 0,
      -- A claimed send ('sending') belongs to its worker until then; after it, any worker takes it again.
      lease_until         timestamptz,
      history             jsonb NOT NULL DEFAULT '[]',
      created_at          timestamptz NOT NULL DEFAULT now(),
      updated_at          timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX messages_workspace_idx ON messages (workspace_id, created_at DESC, id DESC);
    CREATE INDEX messages_contact_idx ON messages (contact_id, created_at DESC);
    CREATE INDEX messages_due_idx ON messages (send_at) WHERE status IN ('queued', 'sending');
    CREATE INDEX messages_provider_message_idx ON messages (provider_message_id) WHERE provider_message_id IS NOT NULL;

    CREATE TABLE short_links (
      code          text PRIMARY KEY,
      workspace_id  text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      template_id   text,
      campaign_id   text,
      url           text NOT NULL,
      clicks        integer NOT NULL DEFAULT 0,
      unique_clicks integer NOT NULL DEFAULT 0,
      created_at    timestamptz NOT NULL DEFAULT now(),
      updated_at    timestamptz NOT NULL DEFAULT now()
    );
    CREATE UNIQUE INDEX short_links_identity_idx
      ON short_links (workspace_id, coalesce(template_id, ''), coalesce(campaign_id, ''), url);
    CREATE INDEX short_links_workspace_idx ON short_links (workspace_id, created_at DESC, code);

    -- One row per (link, message): its first click makes a unique click.
    CREATE TABLE short_link_clicks (
      code          text NOT NULL REFERENCES short_links(code) ON DELETE CASCADE,
      message_id    text NOT NULL,
      workspace_id  text NOT NULL,
      contact_id    text,
      clicks        integer NOT NULL DEFAULT 1,
      first_at      timestamptz NOT NULL DEFAULT now(),
      last_at       timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (code, message_id)
    );
    CREATE INDEX short_link_clicks_contact_idx ON short_link_clicks (contact_id);

    CREATE TABLE idempotency_keys (
      workspace_id  text NOT NULL,
      scope         text NOT NULL,
      key           text NOT NULL,
      request_hash  text NOT NULL,
      -- Null while the first request still runs.
      status        integer,
      response      jsonb,
      created_at    timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (workspace_id, scope, key)
    );
    CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);
  `);
}
