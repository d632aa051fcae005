import { Client } from "pg";
import { randomHex } from "../../lib/crypto";

/** A fresh database cloned from the run's migrated template; dropped by `drop()`. */
export async function createTestDatabase(): Promise<{ url: string; name: string; drop: () => Promise<void> }> {
  const baseUrl = process.env.TEST_DATABASE_BASE_URL;
  const template = process.env.TEST_DATABASE_TEMPLATE;
  if (!baseUrl || !template) throw new Error("test/global-setup.ts did not run");
  const name = `cms_test_${randomHex(6)}`;
  const admin = new Client({ connectionString: baseUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}" TEMPLATE "${template}"`);
  await admin.end();
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    async drop() {
      const client = new Client({ connectionString: baseUrl });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).catch(() => undefined);
      await client.end();
    },
  };
}
