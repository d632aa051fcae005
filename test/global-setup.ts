import os from "node:os";
import path from "node:path";
import fs from "node:fs";
import { Client } from "pg";
import { createSequelize, migrate } from "../lib/database";
import { startEmbeddedPostgres, type RunningPostgres } from "../lib/embedded-postgres";
import { initModels } from "../models";
import { randomHex } from "../lib/crypto";

declare global {
  var __EMBEDDED_PG__: RunningPostgres | undefined;
}

/**
 * One PostgreSQL for the run: DATABASE_URL when given, else an embedded
 * server in a temp dir. A migrated template database is made once; each
 * test file clones it (see test/helpers/database.ts).
 */
export default async function globalSetup(): Promise<void> {
  let baseUrl = process.env.DATABASE_URL;
  if (!baseUrl) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cms-test-pg-"));
    globalThis.__EMBEDDED_PG__ = await startEmbeddedPostgres(dir, { persistent: false });
    baseUrl = globalThis.__EMBEDDED_PG__.url;
    console.log(
      `\nDATABASE_URL is not set: tests use an embedded PostgreSQL (${baseUrl.replace(/:[^:@]*@/, ":***@")})`,
    );
  }
  // Suites whose whole file is skipped print nothing under jest; say why here, once.
  if (!process.env.NATS_URL) {
    console.log("NATS_URL is not set: skipping the NATS suites (cluster over NATS, webhooks over JetStream)");
  }
  if (!process.env.REDIS_URL) {
    console.log(
      "REDIS_URL is not set: skipping the Redis suites (registration limit and API-key cache in Redis)",
    );
  }
  const template = `cms_template_${randomHex(4)}`;
  const admin = new Client({ connectionString: baseUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${template}"`);
  await admin.end();

  const url = new URL(baseUrl);
  url.pathname = `/${template}`;
  const sequelize = createSequelize(url.toString());
  initModels(sequelize);
  await migrate(sequelize, url.toString());
  await sequelize.close();

  process.env.TEST_DATABASE_BASE_URL = baseUrl;
  process.env.TEST_DATABASE_TEMPLATE = template;
}
