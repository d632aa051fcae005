import { Sequelize } from "sequelize";

/** A contact's enrollments in one campaign, found at once: the re-entry checks of every trigger. */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE INDEX campaign_enrollments_campaign_contact_idx ON campaign_enrollments (campaign_id, contact_id, created_at DESC);
  `);
}
