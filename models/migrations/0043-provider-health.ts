import { Sequelize } from "sequelize";

/**
 * Failover between a channel's providers: consecutive transient failures,
 * and whether the provider is `failing` (sends go to the next one) until a
 * probe at `probe_at` succeeds.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    ALTER TABLE providers
      ADD COLUMN status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'failing')),
      ADD COLUMN consecutive_failures integer NOT NULL DEFAULT 0,
      ADD COLUMN failing_since timestamptz,
      ADD COLUMN probe_at timestamptz;
  `);
}
