import { Sequelize } from "sequelize";

/**
 * Inbound messages accepted and waiting to be filed (issue 31): a provider's
 * webhook stores each inbound item here and answers once the row is
 * committed (contract-messaging 5 promises receipt, not filing); the
 * providers service's filer claims due rows in batches under a lease
 * (`claimed_by`, `claimed_until`: a crashed node's batch is taken over when
 * the lease runs out) and marks them `filed_at`. One row per provider and
 * provider message id (`dedupe_key`), so a retried webhook stores nothing
 * twice; filed rows stay a day for that, then the hourly sweep drops them.
 * `conversation` (channel and sender) keeps one sender's messages filed in
 * arrival order (`id`): a row is claimed only when no earlier row of its
 * conversation is waiting or leased.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE TABLE inbound_queue (
      id            bigserial PRIMARY KEY,
      workspace_id  text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      provider_id   text NOT NULL REFERENCES providers(id) ON DELETE CASCADE,
      dedupe_key    text NOT NULL,
      conversation  text NOT NULL,
      -- The provider's inbound event in our words (services/providers/callbacks.ts) and a mail's kept attachments.
      inbound       jsonb NOT NULL,
      attachments   jsonb NOT NULL DEFAULT '[]',
      received_at   timestamptz NOT NULL DEFAULT now(),
      due_at        timestamptz NOT NULL DEFAULT now(),
      attempts      integer NOT NULL DEFAULT 0,
      last_error    text,
      claimed_by    text,
      claimed_until timestamptz,
      filed_at      timestamptz,
      -- Set when the filer gave up on the row (it stays, for an operator to see; it blocks nothing).
      failed_at     timestamptz,
      UNIQUE (provider_id, dedupe_key)
    );
    CREATE INDEX inbound_queue_waiting_idx ON inbound_queue (id) WHERE filed_at IS NULL AND failed_at IS NULL;
    CREATE INDEX inbound_queue_conversation_idx ON inbound_queue (conversation, id)
      WHERE filed_at IS NULL AND failed_at IS NULL;
    CREATE INDEX inbound_queue_filed_idx ON inbound_queue (filed_at) WHERE filed_at IS NOT NULL;
  `);
}
