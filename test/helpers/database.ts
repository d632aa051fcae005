import { Client } from "pg";
import { newId, randomHex } from "../../lib/crypto";
import { database } from "../../lib/database";

type NewDatabase = { url: string; name: string; drop: () => Promise<void> };

/** Database `name` made on the server of `base` (as a copy of `template` when given); dropped by `drop()`. */
async function newDatabase(base: string, name: string, template?: string): Promise<NewDatabase> {
  const admin = new Client({ connectionString: base });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"${template ? ` TEMPLATE "${template}"` : ""}`);
  await admin.end();
  const url = new URL(base);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    async drop() {
      const client = new Client({ connectionString: base });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await client.end();
    },
  };
}

/** A fresh database cloned from the run's migrated template; dropped by `drop()`. */
export async function createTestDatabase(): Promise<NewDatabase> {
  const baseUrl = process.env.TEST_DATABASE_BASE_URL;
  const template = process.env.TEST_DATABASE_TEMPLATE;
  if (!baseUrl || !template) throw new Error("test/global-setup.ts did not run");
  const db = await newDatabase(baseUrl, `cms_test_${randomHex(6)}`, template);
  return { ...db, drop: () => db.drop().catch(() => undefined) };
}

/**
 * A new, empty database (not the migrated template): its migrations really run, CONCURRENTLY indexes included.
 * On the test run's server by default; the benches make theirs on the server they are given.
 */
export async function emptyDatabase(
  base = process.env.TEST_DATABASE_BASE_URL!,
  prefix = "cms_empty",
): Promise<NewDatabase> {
  return newDatabase(base, `${prefix}_${randomHex(5)}`);
}

/** A bare contact row in the workspace (email `<id>@example.test`), for tests that need one fast. */
export async function insertContact(workspaceId: string): Promise<string> {
  const sequelize = await database();
  const id = newId();
  await sequelize.query(`INSERT INTO contacts (id, workspace_id, email) VALUES ($1, $2, $3)`, {
    bind: [id, workspaceId, `${id}@example.test`],
  });
  return id;
}
