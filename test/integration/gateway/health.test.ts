import { Client } from "pg";
import { waitFor } from "../../helpers/wait";
import { startApp, type TestApp } from "../../helpers/app";
import { VERSION } from "../../../lib/paths";

/** GET /api/health: ok with the version; 503 degraded while the database refuses connections. */
let app: TestApp;
let admin: Client;
let dbName: string;

beforeAll(async () => {
  app = await startApp({ services: ["api", "auth"] });
  dbName = new URL(app.databaseUrl).pathname.slice(1);
  admin = new Client({ connectionString: process.env.TEST_DATABASE_BASE_URL });
  await admin.connect();
});
afterAll(async () => {
  await admin.query(`ALTER DATABASE "${dbName}" WITH ALLOW_CONNECTIONS true`).catch(() => undefined);
  await admin.end();
  await app.stop();
});

/** The health answer once it has `status`. */
const healthWith = (status: number) =>
  waitFor(
    async () => {
      const res = await app.http().get("/api/health");
      return res.status === status ? res : undefined;
    },
    10_000,
    `health ${status}`,
  );

test("200 {status: ok, timestamp, version} with the package version", async () => {
  const before = Date.now();
  const res = await app.http().get("/api/health");
  expect(res.status).toBe(200);
  expect(res.body).toMatchObject({ status: "ok", timestamp: expect.any(String), version: VERSION });
  expect(VERSION).toBe(require("../../../package.json").version);
  expect(Date.parse(res.body.timestamp)).toBeGreaterThanOrEqual(before - 1000);
  expect(res.body.timestamp).toMatch(/Z$/);
});

test("health is public: no credential needed, a bad one ignored", async () => {
  expect((await app.http().get("/api/health", { bearer: "svc_nope" })).status).toBe(200);
});

test("503 {status: degraded, checks: {database: unreachable}} while the database is down, 200 again after", async () => {
  await admin.query(`ALTER DATABASE "${dbName}" WITH ALLOW_CONNECTIONS false`);
  await admin.query(
    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
    [dbName],
  );
  try {
    const started = Date.now();
    const down = await healthWith(503);
    expect(down.status).toBe(503);
    expect(down.body).toEqual({
      status: "degraded",
      timestamp: expect.any(String),
      version: VERSION,
      checks: { database: "unreachable", transporter: "none" },
    });
    expect(Date.now() - started).toBeLessThan(5000);
    // it stays degraded, and answers quickly each time
    const t = Date.now();
    expect((await app.http().get("/api/health")).status).toBe(503);
    expect(Date.now() - t).toBeLessThan(2500);
  } finally {
    await admin.query(`ALTER DATABASE "${dbName}" WITH ALLOW_CONNECTIONS true`);
  }
  const up = await healthWith(200);
  expect(up.status).toBe(200);
  expect(up.body.status).toBe("ok");
});
