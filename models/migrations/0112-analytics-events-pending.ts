import { Sequelize } from "sequelize";

/**
 * An event's analytics facts derived by the fold, off the writer's statement.
 *
 * 0109's trigger derived every fact of a stored event inside the events'
 * insert: rollup deltas, first times and sources, activity, touches and
 * attributed conversions. The writer runs one statement at a time, so the
 * trigger's 1.35-1.7 ms a 50-event statement (55-68% of it) was taken off
 * the ingest rate (bench/HISTORY.md, 2026-11-28). Now the trigger appends a
 * copy of each event's analytics columns to `analytics_events_pending`
 * (0.12-0.15 ms a statement), and `analytics_fold_events` derives the same
 * facts from a batch of them in one set-based statement, run by the
 * periodic fold and by every analytics answer before it reads (so answers
 * stay exact the moment an event is stored).
 *
 * - The copy keeps what the rollup facts read, so an event removed before
 *   its fold (retention, its contact removed) is still counted as stored.
 *   Per-contact facts follow the event's contact now: a merge or a claimed
 *   session before the fold gives them to the contact that holds the event,
 *   as a rebuild would; a removed event gives none. One gap is left: a
 *   contact removed by a transaction still open while a fold derives its
 *   last second's events keeps those per-contact facts (its removal's
 *   triggers ran before they were written) until a rebuild of those days;
 *   the rollups' counts are not affected.
 * - Attribution keeps storage order: a conversion counts the touches kept
 *   before its batch, and its batch's own UTM events stored in the same or
 *   an earlier transaction (`stored`), never a touch stored after it.
 * - Batches are taken in storage order (`seq`) under their own advisory
 *   lock, so one fold derives a batch once; the periodic fold tries it, an
 *   answer waits for it. A rebuild takes its days' pending events itself
 *   (it counts them from their rows); the fold skips the rows it holds, so
 *   neither it nor an answer waits for a rebuild.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE TABLE analytics_events_pending (
      seq          bigint GENERATED ALWAYS AS IDENTITY,
      stored       xid8 NOT NULL DEFAULT pg_current_xact_id(),
      id           text NOT NULL,
      workspace_id text NOT NULL,
      type         text NOT NULL,
      metadata     jsonb NOT NULL,
      timestamp    timestamptz NOT NULL,
      utm_source   text,
      utm_medium   text
    );
    CREATE INDEX analytics_events_pending_seq_idx ON analytics_events_pending (seq);

    CREATE OR REPLACE FUNCTION analytics_events_stored() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      INSERT INTO analytics_events_pending (id, workspace_id, type, metadata, timestamp, utm_source, utm_medium)
      SELECT n.id, n.workspace_id, n.type, n.metadata, n.timestamp, n.utm_source, n.utm_medium FROM new_rows n;
      RETURN NULL;
    END $fn$;

    -- Up to batch_size pending events, oldest stored first, derived as 0109's trigger derived them; answers how
    -- many, or null when wait is false and another fold holds the lock.
    CREATE FUNCTION analytics_fold_events(lock_key bigint, batch_size integer, wait boolean) RETURNS integer
      LANGUAGE plpgsql AS $fn$
    DECLARE
      folded integer;
    BEGIN
      IF wait THEN
        PERFORM pg_advisory_xact_lock(lock_key);
      ELSIF NOT pg_try_advisory_xact_lock(lock_key) THEN
        RETURN NULL;
      END IF;
      WITH taken AS (
        DELETE FROM analytics_events_pending p
         WHERE p.ctid = ANY (ARRAY(SELECT q.ctid FROM analytics_events_pending q ORDER BY q.seq LIMIT batch_size
                                   FOR UPDATE SKIP LOCKED))
        RETURNING p.stored, p.id, p.workspace_id, p.type, p.metadata, p.timestamp, p.utm_source, p.utm_medium
      ),
      -- The event as it is held now: its contact after any merge; none once it or its workspace is removed.
      n AS MATERIALIZED (
        SELECT t.stored, t.id, t.workspace_id, e.contact_id, t.type, t.metadata, t.timestamp, t.utm_source,
               t.utm_medium
          FROM taken t
          JOIN events e ON e.id = t.id
         WHERE e.contact_id IS NOT NULL
      ),
      deltas AS (
        INSERT INTO analytics_rollup_deltas (workspace_id, metric, bucket, channel, campaign_id, dim, value)
        SELECT t.workspace_id, f.metric, analytics_bucket(t.timestamp), f.channel, f.campaign_id, f.dim, sum(f.value)
          FROM taken t
          JOIN workspaces w ON w.id = t.workspace_id
         CROSS JOIN LATERAL analytics_event_facts(t.type, t.metadata, t.utm_source) f
         GROUP BY 1, 2, 3, 4, 5, 6
      ),
      firsts AS (
        INSERT INTO analytics_contact_firsts AS f (workspace_id, contact_id, type, first_at)
        SELECT x.* FROM (
          SELECT n.workspace_id, n.contact_id, analytics_key(n.type) AS type, min(n.timestamp) AS first_at
            FROM n
           GROUP BY 1, 2, 3) x
         WHERE NOT EXISTS (SELECT 1 FROM analytics_contact_firsts e
                            WHERE e.workspace_id = x.workspace_id AND e.contact_id = x.contact_id
                              AND e.type = x.type AND e.first_at <= x.first_at)
         ORDER BY 1, 2, 3
        ON CONFLICT (workspace_id, contact_id, type)
        DO UPDATE SET first_at = EXCLUDED.first_at WHERE f.first_at > EXCLUDED.first_at
      ),
      -- Each insert in key order, so a fold and the triggers that move events' contacts never deadlock.
      activity AS (
        INSERT INTO analytics_contact_activity (workspace_id, contact_id, bucket)
        SELECT DISTINCT n.workspace_id, n.contact_id, analytics_bucket(n.timestamp)
          FROM n
         ORDER BY 1, 2, 3
        ON CONFLICT DO NOTHING
      ),
      sources AS (
        INSERT INTO analytics_contact_sources AS f (workspace_id, contact_id, utm_source, utm_medium, first_at)
        SELECT x.* FROM (
          SELECT n.workspace_id, n.contact_id, analytics_key(n.utm_source) AS utm_source,
                 analytics_key(n.utm_medium) AS utm_medium, min(n.timestamp) AS first_at
            FROM n
           WHERE n.utm_source IS NOT NULL
           GROUP BY 1, 2, 3, 4) x
         WHERE NOT EXISTS (SELECT 1 FROM analytics_contact_sources e
                            WHERE e.workspace_id = x.workspace_id AND e.contact_id = x.contact_id
                              AND e.utm_source = x.utm_source AND e.utm_medium = x.utm_medium
                              AND e.first_at <= x.first_at)
         ORDER BY 1, 2, 3, 4
        ON CONFLICT (workspace_id, contact_id, utm_source, utm_medium)
        DO UPDATE SET first_at = EXCLUDED.first_at WHERE f.first_at > EXCLUDED.first_at
      ),
      touches AS (
        INSERT INTO analytics_contact_touches (workspace_id, contact_id, at, kind, key)
        SELECT DISTINCT n.workspace_id, n.contact_id, n.timestamp, 'source', analytics_key(n.utm_source)
          FROM n
         WHERE n.utm_source IS NOT NULL
         ORDER BY 1, 2, 3, 4, 5
        ON CONFLICT DO NOTHING
      ),
      -- Attribution (0089) of the conversions: every event with a contact but page views and message tracking.
      conversions AS MATERIALIZED (
        SELECT n.stored, n.workspace_id, n.contact_id, n.id, n.timestamp AS at, analytics_key(n.type) AS type,
               analytics_amount(n.metadata -> 'amount') AS amount
          FROM n
         WHERE n.type <> 'page_view' AND n.type NOT LIKE 'message.%'
      ),
      -- A conversion's touches of the 30 days up to it that were stored by then: the touches kept before this
      -- statement (which does not see its own inserts), and this batch's UTM events of the same or an earlier
      -- transaction.
      candidates AS (
        SELECT c.id, t.at, t.kind, t.key
          FROM conversions c
          JOIN analytics_contact_touches t
            ON t.workspace_id = c.workspace_id AND t.contact_id = c.contact_id
           AND t.at <= c.at AND t.at > c.at - interval '30 days'
        UNION
        SELECT c.id, b.timestamp, 'source', analytics_key(b.utm_source)
          FROM conversions c
          JOIN n b
            ON b.workspace_id = c.workspace_id AND b.contact_id = c.contact_id AND b.utm_source IS NOT NULL
           AND b.stored <= c.stored AND b.timestamp <= c.at AND b.timestamp > c.at - interval '30 days'
      ),
      touched AS (
        SELECT c.workspace_id, c.contact_id, c.id, c.at, c.type, c.amount, t.kind, t.key,
               row_number() OVER (PARTITION BY c.id ORDER BY t.at, t.kind, t.key) AS from_first,
               row_number() OVER (PARTITION BY c.id ORDER BY t.at DESC, t.kind DESC, t.key DESC) AS from_last,
               count(*) OVER (PARTITION BY c.id) AS touches
          FROM conversions c
          JOIN candidates t ON t.id = c.id
      ),
      kept AS (
        INSERT INTO analytics_contact_conversions (workspace_id, contact_id, type, at, event_id, amount, kinds, keys)
        SELECT x.workspace_id, x.contact_id, x.type, x.at, x.id, x.amount,
               array_agg(x.kind ORDER BY x.from_first), array_agg(x.key ORDER BY x.from_first)
          FROM touched x
         GROUP BY x.workspace_id, x.contact_id, x.type, x.at, x.id, x.amount
         ORDER BY 1, 2, 3, 4, 5
      ),
      attributed AS (
        INSERT INTO analytics_rollup_deltas (workspace_id, metric, bucket, channel, campaign_id, dim, value)
        SELECT x.workspace_id, 'attr.' || m.model || '.' || v.measure || '.' || x.type, analytics_bucket(x.at), x.kind,
               '', x.key, sum(CASE v.measure WHEN 'conversions' THEN 1::numeric ELSE x.amount END / m.share)
          FROM touched x
         CROSS JOIN LATERAL (VALUES ('first_touch', x.from_first = 1, 1::numeric),
                                    ('last_touch', x.from_last = 1, 1::numeric),
                                    ('linear', true, x.touches::numeric)) AS m(model, counts, share)
         CROSS JOIN (VALUES ('conversions'), ('revenue')) AS v(measure)
         WHERE m.counts
         GROUP BY 1, 2, 3, 4, 5, 6
      )
      SELECT count(*) INTO folded FROM taken;
      RETURN folded;
    END $fn$;
  `);
}
