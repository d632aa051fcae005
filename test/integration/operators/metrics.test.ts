import { freePort } from "../../../lib/embedded-postgres";
import { startApp, type TestApp } from "../../helpers/app";
import { waitFor } from "../../helpers/wait";

let app: TestApp;
let metricsPort: number;

beforeAll(async () => {
  metricsPort = await freePort();
  app = await startApp({
    services: ["api", "auth", "workspaces", "webhooks"],
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

test("every background loop counts and times its passes", async () => {
  // The dispatcher's claim loop and the outbox relay pass once when they start.
  const loops = ["webhooks.dispatchDue", "outbox.relay"];
  const text = await waitFor(async () => {
    const body = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    return loops.every((loop) => body.includes(`loop="${loop}"`)) ? body : undefined;
  }, 10_000);
  for (const loop of loops) {
    expect(text).toMatch(
      new RegExp(`background_passes_total\\{[^}]*loop="${loop.replace(".", "\\.")}"[^}]*outcome="ok"`),
    );
    expect(text).toMatch(
      new RegExp(`background_pass_duration_count\\{[^}]*loop="${loop.replace(".", "\\.")}"`),
    );
  }
});
