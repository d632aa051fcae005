import { Client } from "pg";
import { database } from "../../../lib/database";
import { refreshStatistics, staleTables } from "../../../lib/table-stats";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace } from "../../helpers/http";
import { waitFor } from "../../helpers/wait";

let app: TestApp;
let ctx: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let session: Client;

beforeAll(async () => {
  app = await startApp({ services: ["api", "auth", "workspaces"], env: { TABLE_STATS_INTERVAL_MS: "200" } });
  ctx = await ownerWithWorkspace(app.baseUrl);
  // A session like the pool's: every statement on a generic plan.
  session = new Client({
    connectionString: app.databaseUrl,
    options: "-c plan_cache_mode=force_generic_plan",
  });
  await session.connect();
});
afterAll(async () => {
  await session.end();
  await app.stop();
});

const planOf = async () =>
  (await session.query(`EXPLAIN EXECUTE contacts_by_id('{none}')`)).rows
    .map((r) => r["QUERY PLAN"])
    .join("\n");

test("a plan made while a table was empty is made again once the table has grown", async () => {
  await session.query("ANALYZE contacts");
  await session.query("PREPARE contacts_by_id(text[]) AS SELECT id FROM contacts WHERE id = ANY($1)");
  expect(await planOf()).toMatch(/Seq Scan on contacts/);

  await session.query(
    `INSERT INTO contacts (id, workspace_id, email)
     SELECT 'stats-' || n, $1, 'stats-' || n || '@example.com' FROM generate_series(1, 5000) AS n`,
    [ctx.workspaceId],
  );
  // The keeper's timer analyzes the grown table; the analysis retires the plan made from the empty one.
  await waitFor(async () => /contacts_pkey/.test(await planOf()), 15_000, "a plan using contacts_pkey");
  const { rows } = await session.query(
    "SELECT last_analyze IS NOT NULL AS analyzed FROM pg_stat_user_tables WHERE relname = 'contacts'",
  );
  expect(rows[0].analyzed).toBe(true);
});

test("a table is analyzed again only once it has doubled, and grown by at least 500 rows", async () => {
  const sequelize = await database();
  await session.query("ANALYZE contacts");
  await session.query(
    `INSERT INTO contacts (id, workspace_id, email)
     SELECT 'few-' || n, $1, 'few-' || n || '@example.com' FROM generate_series(1, 100) AS n`,
    [ctx.workspaceId],
  );
  expect(await staleTables(sequelize)).not.toContain("contacts");
  expect(await refreshStatistics(sequelize)).not.toContain("contacts");
});
