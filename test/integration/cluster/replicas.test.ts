import { spawn, type ChildProcess } from "node:child_process";
import http from "node:http";
import path from "node:path";
import { ServiceBroker } from "moleculer";
import { randomHex } from "../../../lib/crypto";
import { createTestDatabase } from "../../helpers/database";
import { signUp } from "../../helpers/http";
import { NATS_SERVER_INSTALLED, freePort, startNatsServer, type NatsServer } from "../../helpers/processes";
import { waitFor } from "../../helpers/wait";

/**
 * `npm run start:cluster -- --replicas N` (lib/cluster-plan.ts replicaPlan)
 * runs moleculer-runner with `--instances N`: N copies of the product, each
 * a node of its own over NATS, sharing one port through Node's cluster
 * module, which hands new connections to the copies in turn. Here two copies
 * of the gateway and the auth services, the sources through ts-node.
 */

if (!NATS_SERVER_INSTALLED)
  console.log("replicas.test.ts: skipped: no nats-server binary (.ci/run installs Debian's)");

const ROOT = path.resolve(__dirname, "../../..");
const RUNNER = path.join(path.dirname(require.resolve("moleculer")), "bin", "moleculer-runner.js");

/** One request on a connection of its own (no keep-alive), so each may reach another copy. */
function freshGet(url: string, cookie: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent: false, headers: { cookie } }, (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode!));
      })
      .on("error", reject);
  });
}

(NATS_SERVER_INSTALLED ? describe : describe.skip)("replicas of the product sharing one port", () => {
  const namespace = `replicas-${randomHex(4)}`;
  let nats: NatsServer;
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let runner: ChildProcess;
  let output = "";
  let watcher: ServiceBroker;
  let baseUrl: string;

  beforeAll(async () => {
    nats = await startNatsServer();
    db = await createTestDatabase();
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    runner = spawn(
      process.execPath,
      [
        "-r",
        "ts-node/register/transpile-only",
        RUNNER,
        "--config",
        "moleculer.config.ts",
        "--mask",
        "**/*.service.ts",
        "--instances",
        "2",
      ],
      {
        cwd: ROOT,
        env: {
          ...process.env,
          SERVICEDIR: "services",
          SERVICES: "api,auth,workspaces",
          NODE_ID: "replica-test",
          NAMESPACE: namespace,
          DATABASE_URL: db.url,
          NATS_URL: nats.url,
          PORT: String(port),
          HOST: "127.0.0.1",
          LOG_LEVEL: "warn",
        },
        stdio: ["ignore", "pipe", "pipe"],
        // Its own process group, as start:cluster starts it: a SIGTERM to the group reaches each copy once.
        detached: true,
      },
    );
    runner.stdout!.on("data", (chunk) => (output += chunk));
    runner.stderr!.on("data", (chunk) => (output += chunk));
    watcher = new ServiceBroker({
      namespace,
      nodeID: `watcher-${randomHex(3)}`,
      transporter: nats.url,
      logger: false,
    });
    await watcher.start();
    await waitFor(
      () =>
        (
          watcher.registry.getServiceList({ onlyAvailable: true }) as unknown as Array<{ name: string }>
        ).filter((s) => s.name === "api").length === 2,
      120_000,
      "two copies serving the gateway",
    ).catch((err) => {
      throw new Error(`${err.message}\n${output}`);
    });
    // Each gateway builds its routes as its services appear: wait until both copies route.
    await waitFor(
      async () => {
        for (let i = 0; i < 4; i++)
          if ((await freshGet(`${baseUrl}/api/auth/providers`, "")) !== 200) return false;
        return true;
      },
      30_000,
      "both copies' routes",
    );
  }, 150_000);

  afterAll(async () => {
    if (runner?.exitCode === null) process.kill(-runner.pid!, "SIGKILL");
    await watcher?.stop();
    await db?.drop();
    await nats?.close();
  });

  test("two nodes of their own, both serving; a sign-out on one ends the session on both at once", async () => {
    const nodes = (
      watcher.registry.getServiceList({ onlyAvailable: true }) as unknown as Array<{
        name: string;
        nodeID: string;
      }>
    )
      .filter((s) => s.name === "api")
      .map((s) => s.nodeID)
      .sort();
    expect(nodes).toEqual(["replica-test-1", "replica-test-2"]);

    const user = await signUp(baseUrl);
    const cookie = [...user.client.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
    const session = `${baseUrl}/api/workspaces`;
    // Connections go to the copies in turn: each copy now holds the session in its cache.
    for (let i = 0; i < 6; i++) expect(await freshGet(session, cookie)).toBe(200);

    const csrfToken = (await user.client.get("/api/auth/csrf")).body.csrfToken;
    const signedOut = await user.client.request("POST", "/api/auth/signout", {
      form: { csrfToken, json: "true" },
    });
    expect(signedOut.status).toBe(200);
    // The sign-out's broadcast reaches the other copy over NATS moments after the answer.
    await waitFor(async () => (await freshGet(session, cookie)) === 401, 5_000, "the session ended");
    for (let i = 0; i < 6; i++) expect(await freshGet(session, cookie)).toBe(401);
  });

  test("a SIGTERM to the group stops every copy gracefully, and the runner exits 0", async () => {
    const exited = new Promise<number | null>((resolve) => runner.once("exit", (code) => resolve(code)));
    process.kill(-runner.pid!, "SIGTERM");
    expect(await exited).toBe(0);
    await waitFor(
      () =>
        (
          watcher.registry.getServiceList({ onlyAvailable: true }) as unknown as Array<{ name: string }>
        ).every((s) => s.name !== "api"),
      20_000,
      "both copies gone from the registry",
    );
    // A copy that stops gracefully says goodbye (it is not dropped for missed heartbeats, 15 s later).
    expect(output).not.toMatch(/Error|error/);
  });
});
