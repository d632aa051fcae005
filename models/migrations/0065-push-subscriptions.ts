import { Sequelize } from "sequelize";

/**
 * Push subscriptions of contacts (the website script stores browsers' web
 * push subscriptions; the push channel sends through them). `keys` is
 * sealed: the subscription's auth secret is never answered.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE TABLE push_subscriptions (
      id           text PRIMARY KEY,
      workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      contact_id   text REFERENCES contacts(id) ON DELETE CASCADE,
      type         text NOT NULL CHECK (type IN ('web', 'pushgw1', 'pushgw2')),
      endpoint     text,
      token        text,
      keys         text,
      active       boolean NOT NULL DEFAULT true,
      created_at   timestamptz NOT NULL DEFAULT now(),
      updated_at   timestamptz NOT NULL DEFAULT now(),
      CONSTRAINT push_subscriptions_endpoint_uq UNIQUE (workspace_id, endpoint),
      CONSTRAINT push_subscriptions_token_uq UNIQUE (workspace_id, type, token)
    );
    CREATE INDEX push_subscriptions_contact_idx ON push_subscriptions (contact_id);
  `);
}
