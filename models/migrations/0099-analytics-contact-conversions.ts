import { Sequelize } from "sequelize";

/**
 * Attributed conversions by contact, so attribution can be narrowed to a
 * segment's members. `analytics_contact_conversions` keeps, for each
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

    -- 0089's attribution, the conversion's row kept by the same statement.
    CREATE OR REPLACE FUNCTION analytics_conversions_attributed() RETURNS trigger LANGUAGE plpgsql AS $fn$
    DECLARE
      ws text[]; metrics text[]; at timestamptz[]; kinds text[]; keys text[]; amounts numeric[];
    BEGIN
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
      SELECT array_agg(x.workspace_id), array_agg('attr.' || m.model || '.' || v.measure || '.' || x.type), array_agg(x.at),
             array_agg(x.kind), array_agg(x.key),
             array_agg(CASE v.measure WHEN 'conversions' THEN 1::numeric ELSE x.amount END / m.share)
        INTO ws, metrics, at, kinds, keys, amounts
        FROM touched x
       CROSS JOIN LATERAL (VALUES ('first_touch', x.from_first = 1, 1::numeric),
                                  ('last_touch', x.from_last = 1, 1::numeric),
                                  ('linear', true, x.touches::numeric)) AS m(model, counts, share)
       CROSS JOIN (VALUES ('conversions'), ('revenue')) AS v(measure)
       WHERE m.counts;
      -- Most events have no touch in the window: nothing to add.
      IF ws IS NOT NULL THEN
        PERFORM analytics_add(ws, metrics, at, kinds, array_fill(''::text, ARRAY[cardinality(ws)]), keys, amounts);
      END IF;
      RETURN NULL;
    END $fn$;

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
