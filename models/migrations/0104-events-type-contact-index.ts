import { Sequelize } from "sequelize";

/**
 * The event scans of a segment's set shape ("performed" / "not performed" a type within a window,
 * without conditions on the event's fields) read only the contact of each event: with `contact_id`
 * in the type-and-time index they are index-only scans. Before, each was a bitmap heap scan that,
 * with a type's events spread over the whole table, read nearly every page of it (at 1 M contacts x
 * 10 M events, the bench's "not performed signup in 60 days" read 1.33 M rows from all the heap's
 * pages; bench/HISTORY.md). It replaces `events_type_time_idx`, whose key it has.
 *
 * Built CONCURRENTLY (migrations run outside a transaction, one statement each) so replicas still
 * running keep recording events meanwhile; an interrupted build leaves an invalid index that IF NOT
 * EXISTS would keep: it is dropped and built again.
 */
export async function up(sequelize: Sequelize): Promise<void> {
  const [invalid] = await sequelize.query(
    `SELECT 1 FROM pg_index WHERE indexrelid = to_regclass('events_type_time_contact_idx') AND NOT indisvalid`,
  );
  if (invalid.length > 0) await sequelize.query(`DROP INDEX CONCURRENTLY events_type_time_contact_idx`);
  await sequelize.query(
    `CREATE INDEX CONCURRENTLY IF NOT EXISTS events_type_time_contact_idx
       ON events (workspace_id, type, timestamp DESC) INCLUDE (contact_id)`,
  );
  await sequelize.query(`DROP INDEX CONCURRENTLY IF EXISTS events_type_time_idx`);
}
