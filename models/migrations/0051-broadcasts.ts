import { Sequelize } from "sequelize";

/**
 * Broadcasts: what a broadcast campaign sends (`broadcast`), the job sending
 * it, and its audience as it was when the send began, so a send that
 * stopped resumes over the same contacts.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    ALTER TABLE campaigns ADD COLUMN broadcast jsonb, ADD COLUMN job_id text;
    CREATE INDEX campaigns_broadcasting_idx ON campaigns (id) WHERE type = 'broadcast' AND status = 'active';

    CREATE TABLE broadcast_recipients (
      campaign_id text NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE,
      contact_id  text NOT NULL,
      PRIMARY KEY (campaign_id, contact_id)
    );
  `);
}
