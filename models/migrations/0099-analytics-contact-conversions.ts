import { Sequelize } from "sequelize";

/**
 * Attributed conversions by contact, so attribution can be narrowed to a
 * segment's members, and the events' analytics triggers made one. `analytics_contact_conversions` keeps, for each
 * conversion that had touches when it was stored (0089: every event with a
 * contact except page views and `message.*`), its time, type, amount and the
 * touches it was attributed over, in the order 0089 ranks them (time, kind,
 * key): first_touch is the first, last_touch the last, linear each 1/n. The
 * row and the rollup deltas come from one statement in the conversion's
 * transaction, so a member's row holds exactly what the workspace's rollups
 * counted for it. A merge moves the rows of the events it moves to the
 * survivor; a contact removed takes its rows along (as 0089's facts).
 *
 * Rows for conversions stored before this migration are made from the touches
 * held now: a touch stored after its conversion (which 0089 did not count)
 * cannot be told apart any more.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE TABLE analytics_contact_conversions (
      workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      contact_id   text NOT NULL,
      type         text NOT NULL,
      at           timestamptz NOT NULL,
      event_id     text NOT NULL,
      amount       numeric NOT NULL,
      -- The touches, first to last: kinds[i] and keys[i] are one touch.
      kinds        text[] NOT NULL,
      keys         text[] NOT NULL,
      PRIMARY KEY (workspace_id, contact_id, type, at, event_id)
    );

    INSERT INTO analytics_contact_conversions (workspace_id, contact_id, type, at, event_id, amount, kinds, keys)
    SELECT n.workspace_id, n.contact_id, analytics_key(n.type), n.timestamp, n.id, analytics_amount(n.metadata -> 'amount'),
           array_agg(t.kind ORDER BY t.at, t.kind, t.key), array_agg(t.key ORDER BY t.at, t.kind, t.key)
      FROM events n
      JOIN analytics_contact_touches t
        ON t.workspace_id = n.workspace_id AND t.contact_id = n.contact_id
       AND t.at <= n.timestamp AND t.at > n.timestamp - interval '30 days'
     WHERE n.contact_id IS NOT NULL AND n.type <> 'page_view' AND n.type NOT LIKE 'message.%'
     GROUP BY n.workspace_id, n.contact_id, n.type, n.timestamp, n.id, n.metadata;

    -- Every analytics fact of stored events in one trigger, in one pass of its statements: 0085's deltas and
    -- first times and sources, 0089's activity, touches and attribution, and the conversions above. Four
    -- statement triggers did this before, each a function call of its own per insert; the activity insert
    -- drops 0089's NOT EXISTS prefilter: ON CONFLICT DO NOTHING takes no row lock on a held bucket either,
    -- and the prefilter descended the index a second time for every new one. Touches are stored before the
    -- attribution reads them, so a conversion sees its own statement's touches, as before.
    DROP TRIGGER analytics_events ON events;
    DROP TRIGGER analytics_firsts_inserted ON events;
    DROP TRIGGER analytics_activity_inserted ON events;
    DROP TRIGGER analytics_attribution ON events;
    DROP FUNCTION analytics_events_inserted();
    DROP FUNCTION analytics_activity_inserted();
    DROP FUNCTION analytics_conversions_attributed();

    CREATE FUNCTION analytics_events_stored() RETURNS trigger LANGUAGE plpgsql AS $fn$
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
    CREATE TRIGGER analytics_events_stored AFTER INSERT ON events
      REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION analytics_events_stored();

    -- Conversions move with the events a merge or a claimed session moves.
    CREATE FUNCTION analytics_conversions_moved() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      UPDATE analytics_contact_conversions c SET contact_id = n.contact_id
        FROM new_rows n JOIN old_rows o ON o.id = n.id
       WHERE n.contact_id IS NOT NULL AND o.contact_id IS NOT NULL AND n.contact_id <> o.contact_id
         AND c.workspace_id = o.workspace_id AND c.contact_id = o.contact_id AND c.type = analytics_key(o.type)
         AND c.at = o.timestamp AND c.event_id = o.id;
      RETURN NULL;
    END $fn$;
    CREATE TRIGGER analytics_conversions_moved AFTER UPDATE ON events
      REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION analytics_conversions_moved();

    CREATE FUNCTION analytics_conversions_forget() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      DELETE FROM analytics_contact_conversions f USING old_rows o
       WHERE f.workspace_id = o.workspace_id AND f.contact_id = o.id;
      RETURN NULL;
    END $fn$;
    CREATE TRIGGER analytics_conversions_forgotten AFTER DELETE ON contacts
      REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION analytics_conversions_forget();
  `);
}
