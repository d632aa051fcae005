import type { LoggerInstance } from "moleculer";
import type { Sequelize } from "sequelize";
import { QueryTypes } from "sequelize";
import { Poller } from "./worker";

/**
 * Statistics that keep up with fast-growing tables. Every statement runs on
 * a generic plan (`plan_cache_mode=force_generic_plan`, lib/database.ts)
 * made from the statistics of the moment, and autovacuum looks at a table at
 * most once a minute: on a young database a plan made when `contacts` held
 * ten rows still scans the whole table at ten thousand. So every few seconds
 * one replica (an advisory lock) analyzes each table that has doubled since
 * its statistics were taken; the analysis also retires the plans made from
 * the old figures. Growth, not churn: a table of constant size keeps plans
 * that fit it, and a growing one is analyzed about log2(rows) times in all
 * (an analysis samples the same 30,000 rows however large the table).
 */

/** A table is analyzed once it holds twice the rows, and this many more, than its statistics say. */
export const MIN_GROWTH_ROWS = 500;
const STATS_LOCK = 724_311_902; // shared by every replica, beside the migration lock

/** The tables of the current schema that outgrew their statistics (`reltuples` is -1 before the first). */
export async function staleTables(sequelize: Sequelize): Promise<string[]> {
  const rows = await sequelize.query<{ relname: string }>(
    `SELECT s.relname FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
      WHERE s.schemaname = current_schema()
        AND s.n_live_tup >= GREATEST(2 * c.reltuples, c.reltuples + $1::bigint, $1::bigint)
      ORDER BY s.relname`,
    { bind: [MIN_GROWTH_ROWS], type: QueryTypes.SELECT },
  );
  return rows.map((r) => r.relname);
}

/** Analyze the lagging tables, unless another replica is at it; answers the tables analyzed. */
export async function refreshStatistics(sequelize: Sequelize): Promise<string[]> {
  return sequelize.transaction(async (transaction) => {
    const [{ held }] = await sequelize.query<{ held: boolean }>(
      "SELECT pg_try_advisory_xact_lock($1) AS held",
      { bind: [STATS_LOCK], type: QueryTypes.SELECT, transaction },
    );
    if (!held) return [];
    const tables = await staleTables(sequelize);
    if (tables.length) {
      const names = tables.map((t) => `"${t.replace(/"/g, '""')}"`).join(", ");
      await sequelize.query(`ANALYZE ${names}`, { transaction });
    }
    return tables;
  });
}

/**
 * Refresh statistics every `intervalMs` (0: never) until the returned stop is
 * called, which waits for the refresh in flight. A loop of the pool's process,
 * not a service's periodic step: each process keeps the plans of its own pool.
 */
export function keepStatistics(
  sequelize: Sequelize,
  intervalMs: number,
  logger: Pick<LoggerInstance, "warn">,
): () => Promise<void> {
  if (intervalMs <= 0) return async () => undefined;
  const loop = new Poller({
    name: "table-stats.refresh",
    intervalMs,
    logger,
    pass: async () => {
      await refreshStatistics(sequelize);
      return false;
    },
  });
  loop.start();
  return () => loop.stop();
}
