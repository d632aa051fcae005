import { freePort } from "../../../lib/embedded-postgres";
import { startApp, type TestApp } from "../../helpers/app";

let app: TestApp;
let metricsPort: number;

beforeAll(async () => {
  metricsPort = await freePort();
  app = await startApp({
    services: ["api", "auth", "workspaces"],
    env: { METRICS_PORT: String(metricsPort) },
  });
});
afterAll(() => app.stop());

test("Prometheus metrics are served on METRICS_PORT and count requests", async () => {
  await app.http().get("/api/health");
  const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
  expect(res.status).toBe(200);
  const text = await res.text();
  expect(text).toContain("moleculer_request_total");
  expect(text).toMatch(/moleculer_request_total\{[^}]*action="api.health"/);
});
