import { acquireDatabase, releaseDatabase } from "../lib/database";
import { defineMixin } from "../lib/define-service";

/**
 * The process's one shared PostgreSQL pool (lib/database.ts), held while the
 * service runs: for services whose SQL lives in their repo files and that do
 * not read their entity through moleculer-db's adapter.
 */
export const DatabaseMixin = defineMixin({
  async started() {
    await acquireDatabase();
  },
  async stopped() {
    await releaseDatabase();
  },
});
