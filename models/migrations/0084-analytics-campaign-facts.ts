import { Sequelize } from "sequelize";

/**
 * Campaign analytics facts, derived like the rollups of 0083 (statement
 * triggers in the fact's own transaction): enrollments by their creation, and
 * the enrollments that entered each workflow node, counted once per
 * enrollment and node at its first step there. `analytics_node_entries` is the
 * compact record of which (enrollment, node) pairs were already counted, so a
 * node run again (a retried or resumed step) is not counted twice; it holds
 * no raw data and outlives the campaign logs.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE TABLE analytics_node_entries (
      campaign_id   text NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE,
      enrollment_id text NOT NULL,
      node_id       text NOT NULL,
      PRIMARY KEY (enrollment_id, node_id)
    );
    CREATE INDEX analytics_node_entries_campaign_idx ON analytics_node_entries (campaign_id);

    CREATE FUNCTION analytics_enrollments_inserted() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      INSERT INTO analytics_rollups AS r (workspace_id, metric, bucket, campaign_id, value)
      SELECT n.workspace_id, 'enrollments', analytics_bucket(n.created_at), n.campaign_id, count(*)
        FROM new_rows n GROUP BY 1, 3, 4 ORDER BY 1, 3, 4
      ON CONFLICT (workspace_id, metric, bucket, channel, campaign_id, dim)
      DO UPDATE SET value = r.value + EXCLUDED.value;
      RETURN NULL;
    END $fn$;
    CREATE TRIGGER analytics_enrollments AFTER INSERT ON campaign_enrollments
      REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION analytics_enrollments_inserted();

    CREATE FUNCTION analytics_campaign_logged() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      WITH firsts AS (
        INSERT INTO analytics_node_entries (campaign_id, enrollment_id, node_id)
        SELECT DISTINCT campaign_id, enrollment_id, analytics_key(node_id) FROM new_rows
        ON CONFLICT DO NOTHING
        RETURNING enrollment_id, node_id
      ),
      entered AS (
        SELECT n.workspace_id, n.campaign_id, f.node_id, min(n.created_at) AS at
          FROM firsts f JOIN new_rows n ON n.enrollment_id = f.enrollment_id AND analytics_key(n.node_id) = f.node_id
         GROUP BY n.workspace_id, n.campaign_id, f.node_id, f.enrollment_id
      )
      INSERT INTO analytics_rollups AS r (workspace_id, metric, bucket, campaign_id, dim, value)
      SELECT e.workspace_id, 'campaign.node', analytics_bucket(e.at), e.campaign_id, e.node_id, count(*)
        FROM entered e GROUP BY 1, 3, 4, 5 ORDER BY 1, 3, 4, 5
      ON CONFLICT (workspace_id, metric, bucket, channel, campaign_id, dim)
      DO UPDATE SET value = r.value + EXCLUDED.value;
      RETURN NULL;
    END $fn$;
    CREATE TRIGGER analytics_campaign_logs AFTER INSERT ON campaign_logs
      REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION analytics_campaign_logged();
  `);
}
