import { Sequelize } from "sequelize";

/**
 * The node that last claimed an enrollment's step (`claimed_by`), as webhook deliveries keep theirs: an operator
 * (and the fault tests) can tell which node held a step when it died and which one took it over after the lease.
 * Nullable without a default, so adding it rewrites nothing.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`ALTER TABLE campaign_enrollments ADD COLUMN IF NOT EXISTS claimed_by text`);
}
