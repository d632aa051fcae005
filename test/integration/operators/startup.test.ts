import { spawn } from "node:child_process";
import path from "node:path";
import { Client } from "pg";
import { Sequelize } from "sequelize";
import { createSequelize, migrate } from "../../../lib/database";
import { initModels } from "../../../models";
import { migrations } from "../../../models/migrations";
import { emptyDatabase } from "../../helpers/database";
import { waitFor } from "../../helpers/wait";

const ROOT = path.resolve(__dirname, "../../..");
const MIGRATION_LOCK = 724_311_901;

/**
 * Replicas that start together against a fresh database: one migrates while
 * the others wait for the lock without holding a snapshot, so the
 * CREATE INDEX CONCURRENTLY of a migration is never stuck behind them.
 */
test("three replicas' migrations started at the same moment on a fresh database all finish", async () => {
  const db = await emptyDatabase();
  const replicas: Sequelize[] = [createSequelize(db.url), createSequelize(db.url), createSequelize(db.url)];
  try {
    for (const sequelize of replicas) initModels(sequelize);
    await Promise.all(replicas.map((sequelize) => migrate(sequelize, db.url)));
    const client = new Client({ connectionString: db.url });
    await client.connect();
    const { rows } = await client.query<{ name: string }>("SELECT name FROM schema_migrations ORDER BY name");
    const index = await client.query(
      "SELECT indisvalid FROM pg_index WHERE indexrelid = 'events_type_time_contact_idx'::regclass",
    );
    await client.end();
    expect(rows.map((r) => r.name)).toEqual(migrations.map((m) => m.name).sort());
    expect(index.rows).toEqual([{ indisvalid: true }]);
  } finally {
    await Promise.all(replicas.map((sequelize) => sequelize.close()));
    await db.drop();
  }
}, 120_000);

test("a process waiting for another replica's migrations stops promptly on SIGTERM", async () => {
  const db = await emptyDatabase();
  const holder = new Client({ connectionString: db.url });
  await holder.connect();
  await holder.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK]);
  const child = spawn(
    process.execPath,
    ["-r", "ts-node/register/transpile-only", "test/fixtures/start-services.ts"],
    {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: db.url, LOG_LEVEL: "error", NATS_URL: "", TRANSPORTER: "" },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let output = "";
  child.stdout.on("data", (chunk) => (output += chunk));
  child.stderr.on("data", (chunk) => (output += chunk));
  try {
    // It is up to the migration lock: polling for it, with the holder in the way.
    await waitFor(
      async () => {
        const { rows } = await holder.query(
          "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND query LIKE '%pg_try_advisory_lock%' AND pid <> pg_backend_pid()",
        );
        return rows.length > 0;
      },
      60_000,
      "the child polling for the migration lock",
    );
    const signalled = Date.now();
    child.kill("SIGTERM");
    await waitFor(
      () => child.exitCode !== null || child.signalCode !== null,
      15_000,
      "the child to exit on SIGTERM",
    );
    expect(output).not.toContain("started");
    expect(Date.now() - signalled).toBeLessThan(15_000);
  } finally {
    child.kill("SIGKILL");
    await holder.end();
    await db.drop();
  }
}, 120_000);
