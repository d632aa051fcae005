import { Sequelize } from "sequelize";

/**
 * The shared inbox (contract-messaging 11): threads per contact and channel,
 * their messages both ways, assignment rules (with the round robin's cursor),
 * auto-replies (each fired at most once per thread, rule and local day: the
 * log's key makes that exact across replicas) and canned responses.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE TABLE inbox_threads (
      id                   text PRIMARY KEY,
      workspace_id         text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      channel              text NOT NULL CHECK (channel IN ('email', 'sms', 'chatapp1', 'chatapp2')),
      contact_id           text NOT NULL REFERENCES contacts(id) ON DELETE CASCADE,
      subject              text,
      status               text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'pending', 'snoozed', 'closed')),
      assignee_id          text REFERENCES users(id) ON DELETE SET NULL,
      assigned_at          timestamptz,
      rule_id              text,
      snoozed_until        timestamptz,
      tags                 text[] NOT NULL DEFAULT '{}',
      unread               integer NOT NULL DEFAULT 0,
      awaiting_since       timestamptz,
      origin_message_id    text,
      last_message_at      timestamptz NOT NULL DEFAULT now(),
      created_at           timestamptz NOT NULL DEFAULT now(),
      updated_at           timestamptz NOT NULL DEFAULT now()
    );
    -- One thread a contact can write into per channel: concurrent inbound on any replica lands in it.
    CREATE UNIQUE INDEX inbox_threads_one_open_uq ON inbox_threads (workspace_id, contact_id, channel)
      WHERE status <> 'closed';
    CREATE INDEX inbox_threads_list_idx ON inbox_threads (workspace_id, last_message_at DESC, id DESC);
    CREATE INDEX inbox_threads_snoozed_idx ON inbox_threads (snoozed_until) WHERE status = 'snoozed';
    CREATE INDEX inbox_threads_waiting_idx ON inbox_threads (rule_id, created_at)
      WHERE assignee_id IS NULL AND rule_id IS NOT NULL AND status <> 'closed';
    CREATE INDEX inbox_threads_assignee_idx ON inbox_threads (workspace_id, assignee_id) WHERE status <> 'closed';

    CREATE TABLE inbox_messages (
      id                  text PRIMARY KEY,
      workspace_id        text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      thread_id           text NOT NULL REFERENCES inbox_threads(id) ON DELETE CASCADE,
      direction           text NOT NULL CHECK (direction IN ('inbound', 'outbound')),
      body                text NOT NULL,
      subject             text,
      author_id           text REFERENCES users(id) ON DELETE SET NULL,
      status              text NOT NULL CHECK (status IN ('received', 'sending', 'sent', 'failed')),
      error               text,
      provider_id         text,
      provider_message_id text,
      message_id          text,
      refs                text[] NOT NULL DEFAULT '{}',
      created_at          timestamptz NOT NULL DEFAULT now(),
      updated_at          timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX inbox_messages_thread_idx ON inbox_messages (thread_id, created_at, id);
    -- A provider delivering the same inbound twice (a retried webhook, two replicas) stores it once.
    CREATE UNIQUE INDEX inbox_messages_inbound_uq ON inbox_messages (provider_id, provider_message_id)
      WHERE direction = 'inbound' AND provider_message_id IS NOT NULL;
    CREATE INDEX inbox_messages_provider_idx ON inbox_messages (workspace_id, provider_message_id)
      WHERE provider_message_id IS NOT NULL;

    CREATE TABLE inbox_assignment_rules (
      id           text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      name         text NOT NULL,
      type         text NOT NULL CHECK (type IN ('round_robin', 'condition')),
      priority     integer NOT NULL DEFAULT 0,
      active       boolean NOT NULL DEFAULT true,
      config       jsonb NOT NULL,
      cursor       integer NOT NULL DEFAULT 0,
      created_at   timestamptz NOT NULL DEFAULT now(),
      updated_at   timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX inbox_assignment_rules_ws_idx ON inbox_assignment_rules (workspace_id, priority);

    CREATE TABLE inbox_auto_replies (
      id             text PRIMARY KEY,
      workspace_id   text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      name           text NOT NULL,
      channel        text CHECK (channel IN ('email', 'sms', 'chatapp1', 'chatapp2')),
      keywords       text[] NOT NULL DEFAULT '{}',
      business_hours jsonb,
      body           text NOT NULL,
      active         boolean NOT NULL DEFAULT true,
      created_at     timestamptz NOT NULL DEFAULT now(),
      updated_at     timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX inbox_auto_replies_ws_idx ON inbox_auto_replies (workspace_id);

    CREATE TABLE inbox_auto_reply_log (
      thread_id  text NOT NULL REFERENCES inbox_threads(id) ON DELETE CASCADE,
      rule_id    text NOT NULL REFERENCES inbox_auto_replies(id) ON DELETE CASCADE,
      day        date NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (thread_id, rule_id, day)
    );

    CREATE TABLE inbox_canned_responses (
      id           text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      name         text NOT NULL,
      shortcode    text NOT NULL,
      body         text NOT NULL,
      channel      text CHECK (channel IN ('email', 'sms', 'chatapp1', 'chatapp2')),
      created_at   timestamptz NOT NULL DEFAULT now(),
      updated_at   timestamptz NOT NULL DEFAULT now(),
      CONSTRAINT inbox_canned_responses_shortcode_uq UNIQUE (workspace_id, shortcode)
    );
  `);
}
