import { Sequelize } from "sequelize";

/**
 * Contacts' activity appended like the rollup deltas (0085) and folded later.
 * The events' trigger (0099) inserted each event's 15-minute bucket into
 * `analytics_contact_activity` with ON CONFLICT DO NOTHING, one probe of that
 * table's key per contact and bucket inside the writer's transaction: for a
 * contact's first event in a quarter hour, an index insert into the largest
 * per-contact table on the ingest's path. Now the trigger appends the bucket to
 * `analytics_contact_activity_pending` (insert-only, a small index for the
 * readers), in the event's own transaction as before; the periodic fold
 * (`analytics.foldRollups`, services/analytics/activity.repo.ts) moves
 * bounded batches into `analytics_contact_activity`, deleting them in the same
 * statement, under the fold's advisory lock. Cohorts read both tables in one
 * statement, so an answer is exact folded or not (a pair in both counts once:
 * cohorts count distinct contacts per period).
 *
 * A contact removed takes its pending rows along, as its activity (0089). The
 * pending rows keep no foreign key (its check would lock the workspace's row
 * in every ingest); the fold drops those of a deleted workspace.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE TABLE analytics_contact_activity_pending (
      workspace_id text NOT NULL,
      contact_id   text NOT NULL,
      -- The event's 15-minute UTC bucket, as in analytics_contact_activity.
      bucket       timestamptz NOT NULL
    ) WITH (
      -- A queue: every row is folded away within seconds, so vacuum by row count, not by table size.
      autovacuum_vacuum_scale_factor = 0,
      autovacuum_vacuum_threshold = 10000
    );
    CREATE INDEX analytics_contact_activity_pending_read_idx
      ON analytics_contact_activity_pending (workspace_id, contact_id, bucket);

    -- 0099's function, its activity insert now an append.
    CREATE OR REPLACE FUNCTION analytics_events_stored() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
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

      -- Appended, folded into analytics_contact_activity later (services/analytics/activity.repo.ts).
      INSERT INTO analytics_contact_activity_pending (workspace_id, contact_id, bucket)
      SELECT DISTINCT n.workspace_id, n.contact_id, analytics_bucket(n.timestamp)
        FROM new_rows n
       WHERE n.contact_id IS NOT NULL;

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

    CREATE FUNCTION analytics_activity_pending_forget() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      DELETE FROM analytics_contact_activity_pending f USING old_rows o
       WHERE f.workspace_id = o.workspace_id AND f.contact_id = o.id;
      RETURN NULL;
    END $fn$;
    CREATE TRIGGER analytics_activity_pending_forgotten AFTER DELETE ON contacts
      REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION analytics_activity_pending_forget();
  `);
}
