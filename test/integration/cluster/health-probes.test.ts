import { Client } from "pg";
import { randomHex } from "../../../lib/crypto";
import { startApp, type TestApp } from "../../helpers/app";
import { NATS_SERVER_INSTALLED, freePort, startNatsServer, type NatsServer } from "../../helpers/processes";
import { waitFor } from "../../helpers/wait";

/**
 * The probes Kubernetes asks every node (HEALTH_PORT, lib/health.ts): a
 * worker node (webhooks, no gateway) is ready only while its database
 * answers and its transporter is connected, and live throughout. The NATS
 * server is the test's own, on a free port, so it can be stopped and started
 * again; the database is closed to connections and opened again.
 */

if (!NATS_SERVER_INSTALLED)
  console.log("health-probes.test.ts: skipped: no nats-server binary (.ci/run installs Debian's)");

(NATS_SERVER_INSTALLED ? describe : describe.skip)("readiness and liveness of a worker node", () => {
  let nats: NatsServer;
  let healthPort: number;
  let app: TestApp;
  let admin: Client;
  let dbName: string;

  const probe = async (path: string) => {
    const res = await fetch(`http://127.0.0.1:${healthPort}${path}`);
    return {
      status: res.status,
      body: (await res.json()) as { status: string; checks?: Record<string, string> },
    };
  };
  const readyIs = (status: number) =>
    waitFor(
      async () => {
        const res = await probe("/ready");
        return res.status === status ? res : undefined;
      },
      15_000,
      `/ready ${status}`,
    );

  beforeAll(async () => {
    healthPort = await freePort();
    nats = await startNatsServer();
    const natsUrl = nats.url;
    app = await startApp({
      services: ["webhooks"],
      withoutGateway: true,
      env: { NATS_URL: natsUrl, NAMESPACE: `probes-${randomHex(4)}`, HEALTH_PORT: String(healthPort) },
      broker: { transporter: natsUrl },
    });
    dbName = new URL(app.databaseUrl).pathname.slice(1);
    admin = new Client({ connectionString: process.env.TEST_DATABASE_BASE_URL });
    await admin.connect();
  });
  afterAll(async () => {
    await admin?.query(`ALTER DATABASE "${dbName}" WITH ALLOW_CONNECTIONS true`).catch(() => undefined);
    await admin?.end();
    await app?.stop();
    await nats?.close();
  });

  test("ready with its database and transporter; unknown paths and methods refused", async () => {
    expect(await probe("/ready")).toEqual({
      status: 200,
      body: expect.objectContaining({ status: "ok", checks: { database: "ok", transporter: "ok" } }),
    });
    expect(await probe("/live")).toEqual({ status: 200, body: { status: "ok" } });
    expect((await probe("/nope")).status).toBe(404);
    expect((await fetch(`http://127.0.0.1:${healthPort}/ready`, { method: "POST" })).status).toBe(405);
  });

  test("NATS gone: not ready, still live; NATS back: ready again without a restart", async () => {
    await nats.stop();
    const down = await readyIs(503);
    expect(down.body).toMatchObject({
      status: "degraded",
      checks: { database: "ok", transporter: "disconnected" },
    });
    expect((await probe("/live")).status).toBe(200);
    await nats.start();
    expect((await readyIs(200)).body.checks).toEqual({ database: "ok", transporter: "ok" });
  });

  test("database gone: not ready, still live; back: ready again", async () => {
    await admin.query(`ALTER DATABASE "${dbName}" WITH ALLOW_CONNECTIONS false`);
    await admin.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
      [dbName],
    );
    try {
      const down = await readyIs(503);
      expect(down.body.checks).toEqual({ database: "unreachable", transporter: "ok" });
      expect((await probe("/live")).status).toBe(200);
    } finally {
      await admin.query(`ALTER DATABASE "${dbName}" WITH ALLOW_CONNECTIONS true`);
    }
    expect((await readyIs(200)).body.status).toBe("ok");
  });
});
