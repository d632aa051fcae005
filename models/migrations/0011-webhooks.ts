import { Sequelize } from "sequelize";

/**
 * Webhook endpoints, their deliveries (a durable outbound queue claimed with
 * FOR UPDATE SKIP LOCKED) and the inbound replay window.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE TABLE webhook_endpoints (
      id            text PRIMARY KEY,
      workspace_id  text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      name          text,
      url           text,
      events        jsonb NOT NULL DEFAULT '[]'::jsonb,
      direction     text NOT NULL DEFAULT 'OUTBOUND' CHECK (direction IN ('INBOUND', 'OUTBOUND')),
      active        boolean NOT NULL DEFAULT true,
      secret_sealed text,
      created_by    text,
      created_at    timestamptz NOT NULL DEFAULT now(),
      updated_at    timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX webhook_endpoints_workspace_idx ON webhook_endpoints (workspace_id, direction) WHERE active;

    CREATE TABLE webhook_deliveries (
      id              text PRIMARY KEY,
      workspace_id    text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      endpoint_id     text NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
      event           text NOT NULL,
      direction       text NOT NULL CHECK (direction IN ('INBOUND', 'OUTBOUND')),
      source_event_id text,
      -- The exact bytes sent (serialised once at fan-out, so every attempt signs the same body).
      body            text NOT NULL,
      attempt         integer NOT NULL DEFAULT 0,
      success         boolean NOT NULL DEFAULT false,
      status_code     integer,
      response_body   text,
      error           text,
      duration_ms     integer,
      next_attempt_at timestamptz,
      claimed_until   timestamptz,
      claim_token     text,
      claimed_by      text,
      created_at      timestamptz NOT NULL DEFAULT now(),
      delivered_at    timestamptz
    );
    -- One delivery per domain event and endpoint: a redelivered domain event fans out nothing twice.
    CREATE UNIQUE INDEX webhook_deliveries_source_uq ON webhook_deliveries (endpoint_id, source_event_id)
      WHERE source_event_id IS NOT NULL AND direction = 'OUTBOUND';
    CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE next_attempt_at IS NOT NULL;
    CREATE INDEX webhook_deliveries_list_idx ON webhook_deliveries (workspace_id, created_at DESC, id DESC);
    CREATE INDEX webhook_deliveries_endpoint_idx ON webhook_deliveries (endpoint_id);

    -- Signed inbound requests seen in the last 5 minutes (replay protection).
    CREATE TABLE webhook_inbound_replays (
      endpoint_id  text NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
      digest       text NOT NULL,
      received_at  timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (endpoint_id, digest)
    );
  `);
}
