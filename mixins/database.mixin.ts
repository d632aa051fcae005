import type { ServiceSchema } from "moleculer";
import { acquireDatabase, releaseDatabase } from "../lib/database";

/**
 * The process's one shared PostgreSQL pool (lib/database.ts), held while the
 * service runs: for services whose SQL lives in their repo files and that do
 * not read their entity through moleculer-db's adapter.
 */
export const DatabaseMixin: Partial<ServiceSchema> = {
  async started() {
    await acquireDatabase();
  },
  async stopped() {
    await releaseDatabase();
  },
};
