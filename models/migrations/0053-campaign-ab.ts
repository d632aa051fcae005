import { Sequelize } from "sequelize";

/**
 * A/B splits of campaigns: a winner chosen by hand or by the significance
 * test (later contacts take it). And the messages of a campaign or an
 * enrollment found by index (the messages list filter, a broadcast's
 * figures, a split's figures).
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE TABLE campaign_ab_winners (
      campaign_id text NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE,
      node_id     text NOT NULL,
      workspace_id text NOT NULL,
      winner      text NOT NULL,
      decided_by  text NOT NULL CHECK (decided_by IN ('hand', 'test')),
      decided_at  timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (campaign_id, node_id)
    );
    CREATE INDEX messages_campaign_idx ON messages (campaign_id, created_at DESC) WHERE campaign_id IS NOT NULL;
    CREATE INDEX messages_enrollment_idx ON messages (enrollment_id) WHERE enrollment_id IS NOT NULL;
  `);
}
