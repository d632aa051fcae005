import { Client } from "pg";

export default async function globalTeardown(): Promise<void> {
  const baseUrl = process.env.TEST_DATABASE_BASE_URL;
  const template = process.env.TEST_DATABASE_TEMPLATE;
  if (baseUrl && template) {
    const admin = new Client({ connectionString: baseUrl });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS "${template}" WITH (FORCE)`).catch(() => undefined);
    await admin.end();
  }
  await globalThis.__EMBEDDED_PG__?.stop();
}
