import { startApp, type TestApp } from "../../helpers/app";

/** Only the services this suite exercises (other areas are tested on their own). */
const SERVICES = ["api", "auth", "workspaces"];

/** CORS_ORIGINS set: the listed origins get CORS headers and preflights; others do not. */
const ALLOWED = "https://app.example.test";
let app: TestApp;
beforeAll(async () => {
  app = await startApp({
    services: SERVICES,
    env: { CORS_ORIGINS: `${ALLOWED}, https://admin.example.test` },
  });
});
afterAll(() => app.stop());

test("a request from a listed origin gets the CORS headers, with credentials and Retry-After exposed", async () => {
  const res = await app.http().get("/api/health", { headers: { origin: ALLOWED } });
  expect(res.status).toBe(200);
  expect(res.headers.get("access-control-allow-origin")).toBe(ALLOWED);
  expect(res.headers.get("access-control-allow-credentials")).toBe("true");
  expect(res.headers.get("access-control-expose-headers")).toContain("Retry-After");
  const second = await app.http().get("/api/health", { headers: { origin: "https://admin.example.test" } });
  expect(second.headers.get("access-control-allow-origin")).toBe("https://admin.example.test");
});

test("error answers carry the CORS headers too, so the browser can read them", async () => {
  const res = await app.http().get("/api/workspaces", { headers: { origin: ALLOWED } });
  expect(res.status).toBe(401);
  expect(res.body.code).toBe("UNAUTHORIZED");
  expect(res.headers.get("access-control-allow-origin")).toBe(ALLOWED);
});

test("a preflight from a listed origin is 204 with methods, headers and max-age, and runs nothing", async () => {
  const res = await app.http().request("OPTIONS", "/api/workspaces", {
    headers: {
      origin: ALLOWED,
      "access-control-request-method": "POST",
      "access-control-request-headers": "content-type,authorization",
    },
  });
  expect(res.status).toBe(204);
  expect(res.text).toBe("");
  expect(res.headers.get("access-control-allow-origin")).toBe(ALLOWED);
  expect(res.headers.get("access-control-allow-methods")).toContain("POST");
  expect(res.headers.get("access-control-allow-headers")).toMatch(/Authorization/);
  expect(res.headers.get("access-control-max-age")).toBe("3600");
});

test("an origin that is not listed gets no CORS headers", async () => {
  const res = await app.http().get("/api/health", { headers: { origin: "https://evil.example" } });
  expect(res.headers.get("access-control-allow-origin")).toBeNull();
  const preflight = await app.http().request("OPTIONS", "/api/workspaces", {
    headers: { origin: "https://evil.example", "access-control-request-method": "POST" },
  });
  expect(preflight.headers.get("access-control-allow-origin")).toBeNull();
  expect(preflight.status).toBeGreaterThanOrEqual(400);
  expect(preflight.body).toEqual({ error: expect.any(String), code: expect.any(String) });
});

test("without an Origin header nothing changes", async () => {
  const res = await app.http().get("/api/health");
  expect(res.status).toBe(200);
  expect(res.headers.get("access-control-allow-origin")).toBeNull();
});
