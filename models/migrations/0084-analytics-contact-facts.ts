import { Sequelize } from "sequelize";

/**
 * Per-contact and campaign analytics facts. `analytics_contact_firsts` keeps
 * when each contact first did each event type (the earliest `timestamp`, so a
 * late or backfilled event moves it back): the funnel reads it, never the
 * events. An anonymous session's events claimed by a contact, and a merge's
 * events moved to the survivor, update it; a contact removed takes its rows
 * with it, as its events go. `analytics_contact_sources` keeps, the same way,
 * when each contact first came from each UTM source and medium.
 *
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
    CREATE TABLE analytics_contact_firsts (
      workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      contact_id   text NOT NULL,
      type         text NOT NULL,
      first_at     timestamptz NOT NULL,
      PRIMARY KEY (workspace_id, contact_id, type)
    );
    CREATE INDEX analytics_contact_firsts_type_idx ON analytics_contact_firsts (workspace_id, type, first_at);

    -- When each contact first came from each UTM source and medium ('' for none): the sources answer.
    CREATE TABLE analytics_contact_sources (
      workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      contact_id   text NOT NULL,
      utm_source   text NOT NULL,
      utm_medium   text NOT NULL,
      first_at     timestamptz NOT NULL,
      PRIMARY KEY (workspace_id, contact_id, utm_source, utm_medium)
    );
    CREATE INDEX analytics_contact_sources_time_idx ON analytics_contact_sources (workspace_id, first_at);

    CREATE FUNCTION analytics_firsts_seen() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      IF TG_OP = 'INSERT' THEN
        INSERT INTO analytics_contact_firsts AS f (workspace_id, contact_id, type, first_at)
        SELECT n.workspace_id, n.contact_id, analytics_key(n.type), min(n.timestamp)
          FROM new_rows n
         WHERE n.contact_id IS NOT NULL
         GROUP BY 1, 2, 3
         ORDER BY 1, 2, 3
        ON CONFLICT (workspace_id, contact_id, type)
        DO UPDATE SET first_at = EXCLUDED.first_at WHERE f.first_at > EXCLUDED.first_at;
        INSERT INTO analytics_contact_sources AS f (workspace_id, contact_id, utm_source, utm_medium, first_at)
        SELECT n.workspace_id, n.contact_id, analytics_key(n.utm_source), analytics_key(n.utm_medium), min(n.timestamp)
          FROM new_rows n
         WHERE n.contact_id IS NOT NULL AND n.utm_source IS NOT NULL
         GROUP BY 1, 2, 3, 4
         ORDER BY 1, 2, 3, 4
        ON CONFLICT (workspace_id, contact_id, utm_source, utm_medium)
        DO UPDATE SET first_at = EXCLUDED.first_at WHERE f.first_at > EXCLUDED.first_at;
      ELSE
        -- Only events whose contact changed (a session claimed, a merge).
        INSERT INTO analytics_contact_firsts AS f (workspace_id, contact_id, type, first_at)
        SELECT n.workspace_id, n.contact_id, analytics_key(n.type), min(n.timestamp)
          FROM new_rows n JOIN old_rows o ON o.id = n.id
         WHERE n.contact_id IS NOT NULL AND n.contact_id IS DISTINCT FROM o.contact_id
         GROUP BY 1, 2, 3
         ORDER BY 1, 2, 3
        ON CONFLICT (workspace_id, contact_id, type)
        DO UPDATE SET first_at = EXCLUDED.first_at WHERE f.first_at > EXCLUDED.first_at;
        INSERT INTO analytics_contact_sources AS f (workspace_id, contact_id, utm_source, utm_medium, first_at)
        SELECT n.workspace_id, n.contact_id, analytics_key(n.utm_source), analytics_key(n.utm_medium), min(n.timestamp)
          FROM new_rows n JOIN old_rows o ON o.id = n.id
         WHERE n.contact_id IS NOT NULL AND n.contact_id IS DISTINCT FROM o.contact_id AND n.utm_source IS NOT NULL
         GROUP BY 1, 2, 3, 4
         ORDER BY 1, 2, 3, 4
        ON CONFLICT (workspace_id, contact_id, utm_source, utm_medium)
        DO UPDATE SET first_at = EXCLUDED.first_at WHERE f.first_at > EXCLUDED.first_at;
      END IF;
      RETURN NULL;
    END $fn$;
    CREATE TRIGGER analytics_firsts_inserted AFTER INSERT ON events
      REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION analytics_firsts_seen();
    CREATE TRIGGER analytics_firsts_moved AFTER UPDATE ON events
      REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION analytics_firsts_seen();

    CREATE FUNCTION analytics_firsts_forget() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      DELETE FROM analytics_contact_firsts f USING old_rows o
       WHERE f.workspace_id = o.workspace_id AND f.contact_id = o.id;
      DELETE FROM analytics_contact_sources f USING old_rows o
       WHERE f.workspace_id = o.workspace_id AND f.contact_id = o.id;
      RETURN NULL;
    END $fn$;
    CREATE TRIGGER analytics_firsts_forgotten AFTER DELETE ON contacts
      REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION analytics_firsts_forget();

    CREATE TABLE analytics_node_entries (
      campaign_id   text NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE,
      enrollment_id text NOT NULL,
      node_id       text NOT NULL,
      PRIMARY KEY (enrollment_id, node_id)
    );
    CREATE INDEX analytics_node_entries_campaign_idx ON analytics_node_entries (campaign_id);

    CREATE FUNCTION analytics_enrollments_inserted() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      PERFORM analytics_add(array_agg(f.workspace_id), array_agg(f.metric), array_agg(f.at), array_agg(f.channel),
                            array_agg(f.campaign_id), array_agg(f.dim), array_agg(f.value))
        FROM (SELECT n.workspace_id, 'enrollments' AS metric, n.created_at AS at, '' AS channel,
                     n.campaign_id, '' AS dim, 1::numeric AS value
                FROM new_rows n) f;
      RETURN NULL;
    END $fn$;
    CREATE TRIGGER analytics_enrollments AFTER INSERT ON campaign_enrollments
      REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION analytics_enrollments_inserted();

    CREATE FUNCTION analytics_campaign_logged() RETURNS trigger LANGUAGE plpgsql AS $fn$
    DECLARE
      ws text[]; at timestamptz[]; campaigns text[]; nodes text[];
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
      SELECT array_agg(e.workspace_id), array_agg(e.at), array_agg(e.campaign_id), array_agg(e.node_id)
        INTO ws, at, campaigns, nodes
        FROM entered e;
      IF ws IS NOT NULL THEN
        PERFORM analytics_add(ws, array_fill('campaign.node'::text, ARRAY[cardinality(ws)]), at,
                              array_fill(''::text, ARRAY[cardinality(ws)]), campaigns, nodes,
                              array_fill(1::numeric, ARRAY[cardinality(ws)]));
      END IF;
      RETURN NULL;
    END $fn$;
    CREATE TRIGGER analytics_campaign_logs AFTER INSERT ON campaign_logs
      REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION analytics_campaign_logged();
  `);
}
