/**
 * `node dist/bin/migrate.js`: apply every pending migration to DATABASE_URL
 * and exit, the Kubernetes migration Job (k8s/migrate.yaml), run before the
 * services roll out; they run with MIGRATE=false and wait for the schema.
 * Replicas or a second Job may run it at once: the advisory lock of
 * lib/database.ts lets one migrate at a time.
 */
import { config } from "../lib/config";
import { createSequelize, migrate } from "../lib/database";
import { initModels } from "../models";

async function main(): Promise<void> {
  const url = config().databaseUrl;
  if (!url) throw new Error("DATABASE_URL must be set: the migration job migrates that database");
  const sequelize = createSequelize(url);
  initModels(sequelize);
  try {
    await migrate(sequelize, url);
  } finally {
    await sequelize.close();
  }
  console.error("migrate: the schema is current");
}

main().catch((err) => {
  console.error(`migrate: ${(err as Error).message}`);
  process.exit(1);
});
