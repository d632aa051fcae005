import { PERIODIC_STEPS } from "../../../lib/periodic-steps";
import { startApp, type TestApp } from "../../helpers/app";

let app: TestApp;
const CRON_SECRET = "cron-secret-for-tests-0123456789";

beforeAll(async () => {
  app = await startApp({ services: ["api", "auth", "workspaces", "jobs", "cron"], env: { CRON_SECRET } });
});
afterAll(() => app.stop());

test("the tick needs the cron secret as a bearer token", async () => {
  const none = await app.http().get("/api/cron/tick");
  expect(none.status).toBe(401);
  expect(none.body.code).toBe("UNAUTHORIZED");
  const wrong = await app.http().get("/api/cron/tick", { bearer: "not-the-secret" });
  expect(wrong.status).toBe(401);
  const apiKeyShaped = await app.http().get("/api/cron/tick", { bearer: "svc_abc" });
  expect(apiKeyShaped.status).toBe(401);
});

test("the tick runs every deployed queue and names the ones not deployed", async () => {
  const res = await app.http().get("/api/cron/tick", { bearer: CRON_SECRET });
  expect(res.status).toBe(200);
  expect(res.body.ok).toBe(true);
  expect(res.body.results["jobs.sweep"]).toBe(0);
  expect(res.body.results["crm.notifyDueTasks"]).toBe("not deployed");
  // Score decay and the time refresh of segments are steps too (run in their own suites).
  expect(res.body.results["scoring.applyDecay"]).toBe("not deployed");
  expect(res.body.results["segments.refreshTimeBased"]).toBe("not deployed");
  // The sweep of revoked sessions, once only the auth service's own timer.
  expect(res.body.results["auth.pruneRevokedSessions"]).toBe(0);
});

test("the tick runs every periodic step the services run on their own clocks, in the registry's order", async () => {
  const res = await app.http().get("/api/cron/tick", { bearer: CRON_SECRET });
  expect(Object.keys(res.body.results)).toEqual(PERIODIC_STEPS.map((step) => step.action));
});

test("the tick is described in the OpenAPI document with its own security scheme", async () => {
  const doc = (await app.http().get("/api/openapi")).body;
  expect(doc.paths["/api/cron/tick"].get.security).toEqual([{ cronSecret: [] }]);
});
