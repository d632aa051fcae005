import { Sequelize } from "sequelize";

/**
 * The outbound queue in a table of its own: the due work (delivery, endpoint, age, next attempt time, lease) of
 * each OUTBOUND delivery not yet settled, its row deleted once the delivery is delivered or dead. Before, the queue
 * was a partial index of `webhook_deliveries`: recording an attempt took the row out of the index's predicate, a
 * non-HOT update that wrote every index of the history again, and the index kept the entries of delivered rows
 * until a vacuum (bitmap scans never mark them dead), so claims grew slower with the history (bench/HISTORY.md).
 * Now the claim reads the small queue and the history takes an insert and its attempts' records, which touch no
 * indexed column (HOT with room on the page, fillfactor 70 since 0096).
 *
 * A trigger queues the OUTBOUND deliveries inserted with a next attempt time (the fan-out, any writer of the
 * history), one set-based insert per inserting statement; the rows queued so far move over with their leases, in the same
 * transaction as the trigger's creation, so no insert falls between. A queued row goes with its delivery
 * (retention, a deleted endpoint or workspace). The history's lease columns go; `claimed_by` stays, the node whose
 * attempt was recorded last. The old claim indexes go (0106 skips its build when this table exists: on a fresh
 * database it runs after this one).
 */
export async function up(sequelize: Sequelize): Promise<void> {
  await sequelize.query(`
    CREATE TABLE webhook_delivery_queue (
      delivery_id     text PRIMARY KEY REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
      endpoint_id     text NOT NULL,
      -- The delivery's age: endpoints' rows are claimed oldest first, a retry keeps its place.
      created_at      timestamptz NOT NULL,
      next_attempt_at timestamptz NOT NULL,
      claimed_until   timestamptz,
      claim_token     text,
      claimed_by      text
    ) WITH (fillfactor = 70);
    -- "C": the ids are only grouped and compared (see 0106); claims and retries change no column of it (HOT).
    CREATE INDEX webhook_delivery_queue_idx ON webhook_delivery_queue ((endpoint_id COLLATE "C"), created_at, delivery_id);

    -- Once per inserting statement, over its rows together (a fan-out inserts hundreds).
    CREATE FUNCTION webhook_deliveries_queue_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO webhook_delivery_queue (delivery_id, endpoint_id, created_at, next_attempt_at)
      SELECT id, endpoint_id, created_at, next_attempt_at FROM inserted
       WHERE direction = 'OUTBOUND' AND next_attempt_at IS NOT NULL;
      RETURN NULL;
    END $$;
    CREATE TRIGGER webhook_deliveries_queue_inserted AFTER INSERT ON webhook_deliveries
      REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION webhook_deliveries_queue_inserted();

    INSERT INTO webhook_delivery_queue (delivery_id, endpoint_id, created_at, next_attempt_at, claimed_until, claim_token, claimed_by)
    SELECT id, endpoint_id, created_at, next_attempt_at, claimed_until, claim_token, claimed_by
      FROM webhook_deliveries WHERE direction = 'OUTBOUND' AND next_attempt_at IS NOT NULL;
    ANALYZE webhook_delivery_queue;

    ALTER TABLE webhook_deliveries DROP COLUMN claimed_until, DROP COLUMN claim_token;
  `);
  await sequelize.query(`DROP INDEX CONCURRENTLY IF EXISTS webhook_deliveries_queue_idx`);
  await sequelize.query(`DROP INDEX CONCURRENTLY IF EXISTS webhook_deliveries_claim_age_idx`);
}
