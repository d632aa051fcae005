import { Sequelize } from "sequelize";

/**
 * The transactional outbox of domain facts: a write stages its facts here in
 * its own transaction, and a relay (lib/outbox.ts) publishes them to the
 * durable channel and deletes them, so a crash between the commit and the
 * publish loses no fact.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE TABLE domain_event_outbox (
      -- Relay order: oldest staged first.
      seq          bigserial PRIMARY KEY,
      -- The fact's id: consumers (the webhooks fan-out) stay idempotent on it when a fact is published again.
      id           text NOT NULL UNIQUE DEFAULT gen_random_uuid()::text,
      -- No foreign key: the row lives milliseconds, and the events hot path should not pay a check per row.
      workspace_id text NOT NULL,
      type         text NOT NULL,
      data         jsonb NOT NULL,
      occurred_at  timestamptz NOT NULL DEFAULT now()
    ) WITH (
      -- A queue: every row is deleted soon after insert, so vacuum by row count, not by table size.
      autovacuum_vacuum_scale_factor = 0,
      autovacuum_vacuum_threshold = 10000
    );
  `);
}
