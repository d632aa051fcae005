import http from "node:http";
import { ServiceBroker } from "moleculer";
import { randomHex } from "../../../lib/crypto";
import { createTestDatabase } from "../../helpers/database";
import { signUp } from "../../helpers/http";
import {
  NATS_SERVER_INSTALLED,
  freePort,
  serviceOnNode,
  startNatsServer,
  startServiceNode,
  type NatsServer,
  type ServiceNode,
} from "../../helpers/processes";
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
  let runner: ServiceNode;
  let watcher: ServiceBroker;
  let baseUrl: string;

  beforeAll(async () => {
    nats = await startNatsServer();
    db = await createTestDatabase();
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    runner = startServiceNode(
      "replica-test",
      "api,auth,workspaces",
      {
        NAMESPACE: namespace,
        DATABASE_URL: db.url,
        NATS_URL: nats.url,
        PORT: String(port),
        HOST: "127.0.0.1",
      },
      { instances: 2 },
    );
    watcher = new ServiceBroker({
      namespace,
      nodeID: `watcher-${randomHex(3)}`,
      transporter: nats.url,
      logger: false,
    });
    await watcher.start();
    // Both copies serve the gateway, each a node of its own (the runner adds `-<n>` to NODE_ID).
    await Promise.all(
      ["replica-test-1", "replica-test-2"].map((node) => serviceOnNode(watcher, node, "api")),
    ).catch((err) => {
      throw new Error(`${err.message}\n${runner.output()}`);
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
    runner?.kill("SIGKILL");
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
    runner.kill("SIGTERM");
    expect(await runner.exited).toEqual({ code: 0, signal: null });
    await waitFor(
      () =>
        (
          watcher.registry.getServiceList({ onlyAvailable: true }) as unknown as Array<{ name: string }>
        ).every((s) => s.name !== "api"),
      20_000,
      "both copies gone from the registry",
    );
    // A copy that stops gracefully says goodbye (it is not dropped for missed heartbeats, 15 s later).
    expect(runner.output()).not.toMatch(/Error|error/);
  });
});
