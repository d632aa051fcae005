import { Sequelize } from "sequelize";

/**
 * One definition of the rollup facts an event makes, and its contact's
 * activity written where it is read.
 *
 * - `analytics_event_facts(type, metadata, utm_source)`: the metrics an event
 *   adds one (or its amount) to, with their channel, campaign and dimension.
 *   The events' trigger and the analytics rebuild (services/analytics/
 *   rebuild.repo.ts) both read it, so the two cannot count an event apart.
 *   A plain SQL function, inlined into each statement (no call per row).
 * - Activity: 0102 appended each event's 15-minute bucket to
 *   `analytics_contact_activity_pending` and the fold moved it into
 *   `analytics_contact_activity` a second later: two inserts, a delete and
 *   two index entries for each (contact, bucket), where one insert into the
 *   kept table does. Measured by CPU an event with the fold's included
 *   (bench/analytics.ts, 100,000 contacts): the trigger's extra cost on the
 *   database fell from 0.073-0.076 ms to 0.052 ms an event. The trigger
 *   writes the kept table again, in key order (so writers never deadlock);
 *   the events' writer runs one statement at a time (services/events), so
 *   it does not wait on itself. What is pending moves over, and the pending
 *   table, its fold and its readers go.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE FUNCTION analytics_event_facts(event_type text, event_metadata jsonb, event_utm_source text)
      RETURNS TABLE (metric text, channel text, campaign_id text, dim text, value numeric)
      LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
      SELECT m.metric,
             CASE WHEN m.metric IN ('events', 'link.clicks') THEN analytics_key(event_metadata ->> 'channel') ELSE '' END,
             analytics_key(event_metadata ->> 'campaignId'),
             CASE m.metric WHEN 'events' THEN analytics_key(event_type)
                           WHEN 'link.clicks' THEN coalesce(left(event_metadata ->> 'url', 500), '')
                           ELSE analytics_key(event_utm_source) END,
             CASE WHEN m.metric = 'revenue' THEN analytics_amount(event_metadata -> 'amount') ELSE 1 END
        FROM (VALUES ('events'), ('revenue'), ('orders'), ('link.clicks')) AS m(metric)
       WHERE m.metric = 'events'
          OR (m.metric IN ('revenue', 'orders') AND event_type = 'purchase')
          OR (m.metric = 'link.clicks' AND event_type = 'message.click' AND event_metadata ->> 'url' IS NOT NULL)
    $fn$;

    -- 0102's function, its facts from analytics_event_facts and its activity written where it is kept.
    CREATE OR REPLACE FUNCTION analytics_events_stored() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      INSERT INTO analytics_rollup_deltas (workspace_id, metric, bucket, channel, campaign_id, dim, value)
      SELECT n.workspace_id, f.metric, analytics_bucket(n.timestamp), f.channel, f.campaign_id, f.dim, sum(f.value)
        FROM new_rows n
       CROSS JOIN LATERAL analytics_event_facts(n.type, n.metadata, n.utm_source) f
       GROUP BY 1, 2, 3, 4, 5, 6;

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

      -- In key order, so two writers of one contact's bucket never deadlock.
      INSERT INTO analytics_contact_activity (workspace_id, contact_id, bucket)
      SELECT DISTINCT n.workspace_id, n.contact_id, analytics_bucket(n.timestamp)
        FROM new_rows n
       WHERE n.contact_id IS NOT NULL
       ORDER BY 1, 2, 3
      ON CONFLICT DO NOTHING;

      -- Sources and touches: events with a UTM source only.
      IF EXISTS (SELECT 1 FROM new_rows n WHERE n.contact_id IS NOT NULL AND n.utm_source IS NOT NULL) THEN
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
        INSERT INTO analytics_contact_touches (workspace_id, contact_id, at, kind, key)
        SELECT DISTINCT n.workspace_id, n.contact_id, n.timestamp, 'source', analytics_key(n.utm_source)
          FROM new_rows n
         WHERE n.contact_id IS NOT NULL AND n.utm_source IS NOT NULL
         ORDER BY 1, 2, 3, 4, 5
        ON CONFLICT DO NOTHING;
      END IF;

      -- Attribution (0089) of the conversions: every event with a contact but page views and message tracking.
      IF NOT EXISTS (SELECT 1 FROM new_rows n
                      WHERE n.contact_id IS NOT NULL AND n.type <> 'page_view' AND n.type NOT LIKE 'message.%') THEN
        RETURN NULL;
      END IF;
      WITH touched AS (
        SELECT n.workspace_id, n.contact_id, n.id, n.timestamp AS at, analytics_key(n.type) AS type,
               analytics_amount(n.metadata -> 'amount') AS amount, t.kind, t.key,
               row_number() OVER (PARTITION BY n.id ORDER BY t.at, t.kind, t.key) AS from_first,
               row_number() OVER (PARTITION BY n.id ORDER BY t.at DESC, t.kind DESC, t.key DESC) AS from_last,
               count(*) OVER (PARTITION BY n.id) AS touches
          FROM new_rows n
          JOIN analytics_contact_touches t
            ON t.workspace_id = n.workspace_id AND t.contact_id = n.contact_id
           AND t.at <= n.timestamp AND t.at > n.timestamp - interval '30 days'
         WHERE n.contact_id IS NOT NULL AND n.type <> 'page_view' AND n.type NOT LIKE 'message.%'
      ),
      kept AS (
        INSERT INTO analytics_contact_conversions (workspace_id, contact_id, type, at, event_id, amount, kinds, keys)
        SELECT x.workspace_id, x.contact_id, x.type, x.at, x.id, x.amount,
               array_agg(x.kind ORDER BY x.from_first), array_agg(x.key ORDER BY x.from_first)
          FROM touched x
         GROUP BY x.workspace_id, x.contact_id, x.type, x.at, x.id, x.amount
         ORDER BY 1, 2, 3, 4, 5
      )
      -- 0089's attribution deltas, appended by this statement (analytics_add, a SQL function, would plan its
      -- insert again on every call).
      INSERT INTO analytics_rollup_deltas (workspace_id, metric, bucket, channel, campaign_id, dim, value)
      SELECT x.workspace_id, 'attr.' || m.model || '.' || v.measure || '.' || x.type, analytics_bucket(x.at), x.kind, '',
             x.key, sum(CASE v.measure WHEN 'conversions' THEN 1::numeric ELSE x.amount END / m.share)
        FROM touched x
       CROSS JOIN LATERAL (VALUES ('first_touch', x.from_first = 1, 1::numeric),
                                  ('last_touch', x.from_last = 1, 1::numeric),
                                  ('linear', true, x.touches::numeric)) AS m(model, counts, share)
       CROSS JOIN (VALUES ('conversions'), ('revenue')) AS v(measure)
       WHERE m.counts
       GROUP BY 1, 2, 3, 4, 5, 6;
      RETURN NULL;
    END $fn$;

    INSERT INTO analytics_contact_activity (workspace_id, contact_id, bucket)
    SELECT DISTINCT p.workspace_id, p.contact_id, p.bucket
      FROM analytics_contact_activity_pending p
      JOIN workspaces w ON w.id = p.workspace_id
    ON CONFLICT DO NOTHING;
    DROP TRIGGER analytics_activity_pending_forgotten ON contacts;
    DROP FUNCTION analytics_activity_pending_forget();
    DROP TABLE analytics_contact_activity_pending;
  `);
}
