import type { Sequelize } from "sequelize";
import { QueryTypes } from "sequelize";

/**
 * Statistics that keep up with fast-growing tables. Every statement runs on
 * a generic plan (`plan_cache_mode=force_generic_plan`, lib/database.ts)
 * made from the statistics of the moment, and autovacuum looks at a table at
 * most once a minute: on a young database a plan made when `contacts` held
 * ten rows still scans the whole table at ten thousand. So every few seconds
 * one replica (an advisory lock) analyzes each table that changed by a fifth
 * since its last analysis; the analysis also retires the plans made from
 * the old figures.
 */

/** A table is analyzed once this many rows, and a fifth of its rows, changed since its last analysis. */
export const MIN_CHANGED_ROWS = 500;
export const CHANGED_SHARE = 0.2;
const STATS_LOCK = 724_311_902; // shared by every replica, beside the migration lock

/** The tables of the current schema whose statistics lag their rows. */
export async function staleTables(sequelize: Sequelize): Promise<string[]> {
  const rows = await sequelize.query<{ relname: string }>(
    `SELECT relname FROM pg_stat_user_tables
      WHERE schemaname = current_schema()
        AND n_mod_since_analyze >= GREATEST($1::bigint, $2::float8 * n_live_tup)
      ORDER BY relname`,
    { bind: [MIN_CHANGED_ROWS, CHANGED_SHARE], type: QueryTypes.SELECT },
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

/** Refresh statistics every `intervalMs` until the returned stop is called (0: never). */
export function keepStatistics(
  sequelize: Sequelize,
  intervalMs: number,
  onError: (err: Error) => void,
): () => void {
  if (intervalMs <= 0) return () => undefined;
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    refreshStatistics(sequelize)
      .catch(onError)
      .finally(() => (running = false));
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
