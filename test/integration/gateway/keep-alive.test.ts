import http from "node:http";
import { startApp } from "../../helpers/app";
import { createTestDatabase } from "../../helpers/database";

/**
 * The gateway keeps an idle client connection open for HTTP_KEEP_ALIVE_MS
 * (longer than the proxies in front keep theirs), and a stop does not wait
 * that long for a connection whose answer ended during the stop.
 */

/** GET `path` on `agent`'s connection; answers the status and the client port of the socket it used. */
function get(base: string, path: string, agent: http.Agent): Promise<{ status: number; port: number }> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${base}${path}`, { agent }, (res) => {
      res.resume();
      res.on("end", () => resolve({ status: res.statusCode ?? 0, port: req.socket?.localPort ?? 0 }));
    });
    req.on("error", reject);
  });
}

test("an idle connection is still open after Node's default 5 s, and a stop closes it at once", async () => {
  const db = await createTestDatabase();
  const app = await startApp({
    databaseUrl: db.url,
    services: ["api", "auth"],
    env: { HTTP_KEEP_ALIVE_MS: "8000" },
  });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const first = await get(app.baseUrl, "/api/health", agent);
    await new Promise((resolve) => setTimeout(resolve, 5_500));
    const second = await get(app.baseUrl, "/api/health", agent);
    expect([first.status, second.status]).toEqual([200, 200]);
    expect(second.port).toBe(first.port);

    // A request in flight when the gateway stops: once answered, its connection is closed, not kept for 8 s.
    const { server } = app.broker.getLocalService("api") as unknown as { server: http.Server };
    let stopStarted = 0;
    let stopping: Promise<void> | undefined;
    server.once("request", () => {
      stopStarted = Date.now();
      stopping = app.broker.stop();
    });
    const answered = get(app.baseUrl, "/api/health", agent);
    expect((await answered).status).toBeLessThan(600);
    await stopping;
    expect(Date.now() - stopStarted).toBeLessThan(5_000);
  } finally {
    agent.destroy();
    if (app.broker.started) await app.broker.stop();
    await db.drop();
  }
}, 60_000);
