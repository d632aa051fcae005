import { Sequelize } from "sequelize";

/**
 * Rollups as appended deltas. The triggers of 0083 and 0084 upserted each
 * fact into up to 24 rollup rows (three tiers, split and `all:`) inside the
 * writer's transaction, so concurrent writers of one bucket (new contacts,
 * sends, events) queued on those rows' locks until each other's commit. Now
 * a fact's trigger only appends its tier-0 split row to
 * `analytics_rollup_deltas` (insert-only: no key, no lock to wait for), still
 * in the fact's own transaction, so a fact and its count commit or roll back
 * together as before. A periodic fold (services/analytics/rollups.repo.ts,
 * `analytics.foldRollups`) moves bounded batches of deltas into
 * `analytics_rollups` at the three tiers and the `all:` series, deleting them
 * in the same statement, one folder at a time; readers sum the rollups and
 * the deltas not yet folded in one statement, so an answer is exact at every
 * moment. `analytics_add` keeps its signature for the triggers that call it.
 *
 * The contacts' first times (0084) now skip, before upserting, the pairs that
 * already have an earlier or equal time: the upsert's no-op update still
 * locked the row, so a busy contact's events queued on it.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE TABLE analytics_rollup_deltas (
      -- No foreign key: its check would lock the workspace's row in every writer's transaction (a status
      -- update takes none otherwise); the fold drops the deltas of a workspace deleted meanwhile.
      workspace_id text NOT NULL,
      metric       text NOT NULL,
      -- The fact's 15-minute UTC bucket (tier 0); the fold makes the hours and days.
      bucket       timestamptz NOT NULL,
      channel      text NOT NULL DEFAULT '',
      campaign_id  text NOT NULL DEFAULT '',
      dim          text NOT NULL DEFAULT '',
      value        numeric NOT NULL
    ) WITH (
      -- A queue: every row is folded away within seconds, so vacuum by row count, not by table size.
      autovacuum_vacuum_scale_factor = 0,
      autovacuum_vacuum_threshold = 10000
    );
    CREATE INDEX analytics_rollup_deltas_read_idx ON analytics_rollup_deltas (workspace_id, metric, bucket);

    -- Add facts (workspace, metric, time, channel, campaign, dim, value) as deltas, one row per key.
    CREATE OR REPLACE FUNCTION analytics_add(text[], text[], timestamptz[], text[], text[], text[], numeric[]) RETURNS void
    LANGUAGE sql AS $fn$
      INSERT INTO analytics_rollup_deltas (workspace_id, metric, bucket, channel, campaign_id, dim, value)
      SELECT f.ws, f.metric, analytics_bucket(f.at), f.channel, f.campaign, f.dim, sum(f.value)
        FROM unnest($1, $2, $3, $4, $5, $6, $7) AS f(ws, metric, at, channel, campaign, dim, value)
       GROUP BY 1, 2, 3, 4, 5, 6
    $fn$;

    -- Events: as in 0083 (one per event by type; purchases' revenue and orders by campaign and UTM source;
    -- message clicks by url), appended as deltas.
    CREATE OR REPLACE FUNCTION analytics_events_inserted() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      -- The hot path: analytics_add written out, so no arrays are built per statement.
      INSERT INTO analytics_rollup_deltas (workspace_id, metric, bucket, channel, campaign_id, dim, value)
      SELECT f.workspace_id, f.metric, analytics_bucket(f.at), f.channel, f.campaign_id, f.dim, sum(f.value)
        FROM (SELECT n.workspace_id, m.metric, n.timestamp AS at,
                     CASE WHEN m.metric IN ('events', 'link.clicks') THEN analytics_key(n.metadata ->> 'channel') ELSE '' END AS channel,
                     analytics_key(n.metadata ->> 'campaignId') AS campaign_id,
                     CASE m.metric WHEN 'events' THEN analytics_key(n.type)
                                   WHEN 'link.clicks' THEN coalesce(left(n.metadata ->> 'url', 500), '')
                                   ELSE analytics_key(n.utm_source) END AS dim,
                     CASE WHEN m.metric = 'revenue' THEN analytics_amount(n.metadata -> 'amount') ELSE 1 END AS value
                FROM new_rows n
                JOIN LATERAL (VALUES ('events'), ('revenue'), ('orders'), ('link.clicks')) AS m(metric)
                  ON m.metric = 'events'
                  OR (m.metric IN ('revenue', 'orders') AND n.type = 'purchase')
                  OR (m.metric = 'link.clicks' AND n.type = 'message.click' AND n.metadata ->> 'url' IS NOT NULL)) f
       GROUP BY 1, 2, 3, 4, 5, 6;
      RETURN NULL;
    END $fn$;

    -- The contacts' first times as in 0084, skipping the pairs already as early: the upsert's no-op
    -- update would still lock their rows.
    CREATE OR REPLACE FUNCTION analytics_firsts_seen() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      IF TG_OP = 'INSERT' THEN
        INSERT INTO analytics_contact_firsts AS f (workspace_id, contact_id, type, first_at)
        SELECT x.* FROM (
          SELECT n.workspace_id, n.contact_id, analytics_key(n.type) AS type, min(n.timestamp) AS first_at
            FROM new_rows n
           WHERE n.contact_id IS NOT NULL
           GROUP BY 1, 2, 3) x
         WHERE NOT EXISTS (SELECT 1 FROM analytics_contact_firsts e
                            WHERE e.workspace_id = x.workspace_id AND e.contact_id = x.contact_id
                              AND e.type = x.type AND e.first_at <= x.first_at)
         ORDER BY 1, 2, 3
        ON CONFLICT (workspace_id, contact_id, type)
        DO UPDATE SET first_at = EXCLUDED.first_at WHERE f.first_at > EXCLUDED.first_at;
        INSERT INTO analytics_contact_sources AS f (workspace_id, contact_id, utm_source, utm_medium, first_at)
        SELECT x.* FROM (
          SELECT n.workspace_id, n.contact_id, analytics_key(n.utm_source) AS utm_source,
                 analytics_key(n.utm_medium) AS utm_medium, min(n.timestamp) AS first_at
            FROM new_rows n
           WHERE n.contact_id IS NOT NULL AND n.utm_source IS NOT NULL
           GROUP BY 1, 2, 3, 4) x
         WHERE NOT EXISTS (SELECT 1 FROM analytics_contact_sources e
                            WHERE e.workspace_id = x.workspace_id AND e.contact_id = x.contact_id
                              AND e.utm_source = x.utm_source AND e.utm_medium = x.utm_medium
                              AND e.first_at <= x.first_at)
         ORDER BY 1, 2, 3, 4
        ON CONFLICT (workspace_id, contact_id, utm_source, utm_medium)
        DO UPDATE SET first_at = EXCLUDED.first_at WHERE f.first_at > EXCLUDED.first_at;
      ELSE
        -- Only events whose contact changed (a session claimed, a merge).
        INSERT INTO analytics_contact_firsts AS f (workspace_id, contact_id, type, first_at)
        SELECT x.* FROM (
          SELECT n.workspace_id, n.contact_id, analytics_key(n.type) AS type, min(n.timestamp) AS first_at
            FROM new_rows n JOIN old_rows o ON o.id = n.id
           WHERE n.contact_id IS NOT NULL AND n.contact_id IS DISTINCT FROM o.contact_id
           GROUP BY 1, 2, 3) x
         WHERE NOT EXISTS (SELECT 1 FROM analytics_contact_firsts e
                            WHERE e.workspace_id = x.workspace_id AND e.contact_id = x.contact_id
                              AND e.type = x.type AND e.first_at <= x.first_at)
         ORDER BY 1, 2, 3
        ON CONFLICT (workspace_id, contact_id, type)
        DO UPDATE SET first_at = EXCLUDED.first_at WHERE f.first_at > EXCLUDED.first_at;
        INSERT INTO analytics_contact_sources AS f (workspace_id, contact_id, utm_source, utm_medium, first_at)
        SELECT x.* FROM (
          SELECT n.workspace_id, n.contact_id, analytics_key(n.utm_source) AS utm_source,
                 analytics_key(n.utm_medium) AS utm_medium, min(n.timestamp) AS first_at
            FROM new_rows n JOIN old_rows o ON o.id = n.id
           WHERE n.contact_id IS NOT NULL AND n.contact_id IS DISTINCT FROM o.contact_id AND n.utm_source IS NOT NULL
           GROUP BY 1, 2, 3, 4) x
         WHERE NOT EXISTS (SELECT 1 FROM analytics_contact_sources e
                            WHERE e.workspace_id = x.workspace_id AND e.contact_id = x.contact_id
                              AND e.utm_source = x.utm_source AND e.utm_medium = x.utm_medium
                              AND e.first_at <= x.first_at)
         ORDER BY 1, 2, 3, 4
        ON CONFLICT (workspace_id, contact_id, utm_source, utm_medium)
        DO UPDATE SET first_at = EXCLUDED.first_at WHERE f.first_at > EXCLUDED.first_at;
      END IF;
      RETURN NULL;
    END $fn$;
  `);
}
