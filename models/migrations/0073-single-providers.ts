import { Sequelize } from "sequelize";

/**
 * Providers of the push and chat channels (contract 4): a workspace has at
 * most one of each of these types (web push's VAPID pair, each push gateway,
 * each chat messenger), so the type is unique per workspace for them.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    ALTER TABLE providers DROP CONSTRAINT providers_channel_check;
    ALTER TABLE providers ADD CONSTRAINT providers_channel_check
      CHECK (channel IN ('email', 'sms', 'push', 'chatapp1', 'chatapp2'));
    CREATE UNIQUE INDEX providers_single_type_idx ON providers (workspace_id, type)
      WHERE type IN ('vapid', 'pushgw1', 'pushgw2', 'chatapp1', 'chatapp2');
  `);
}
