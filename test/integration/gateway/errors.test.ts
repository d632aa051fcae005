import { Loggers } from "moleculer";
import { Client } from "pg";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace } from "../../helpers/http";
import { waitFor } from "../../helpers/wait";

/** Only the services this suite exercises (other areas are tested on their own). */
const SERVICES = ["api", "auth", "workspaces"];

/** Every gateway failure answers the contract's `{error, code, details?}` body, never a stack trace. */

/** Keeps every log line of the broker, so the request log can be checked. */
const lines: string[] = [];
class CaptureLogger extends Loggers.Base {
  getLogHandler(bindings?: any) {
    return (type: string, args: unknown[]) => {
      lines.push(
        `${type} ${bindings?.mod} ${args.map((a) => (a instanceof Error ? a.stack : String(a))).join(" ")}`,
      );
    };
  }
}
// eslint-disable-next-line no-control-regex
const plain = (s: string) => s.replace(/\x1b\[[0-9;]*m/g, "");

let app: TestApp;
let owner: Awaited<ReturnType<typeof ownerWithWorkspace>>;
let apiKey: string;

beforeAll(async () => {
  app = await startApp({
    services: SERVICES,
    env: { CORS_ORIGINS: undefined },
    broker: { logger: new CaptureLogger({ level: "info" }), logLevel: "info" },
  });
  owner = await ownerWithWorkspace(app.baseUrl);
  const created = await owner.owner.client.post(`${owner.ws}/keys`, { name: "gateway test", scopes: [] });
  expect(created.status).toBe(201);
  apiKey = created.body.key;
});
afterAll(() => app.stop());

const noStack = (text: string) => {
  expect(text).not.toMatch(/\n\s+at /);
  expect(text).not.toMatch(/\.(ts|js):\d+/);
  expect(text).not.toMatch(/stack/i);
};

describe("body errors", () => {
  test("invalid JSON: 400 VALIDATION_ERROR", async () => {
    for (const raw of ["{", '{"name": }', "not json", '{"a":1}}']) {
      const res = await owner.owner.client.request("POST", "/api/workspaces", {
        raw,
        headers: { "content-type": "application/json" },
      });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: "Request body is not valid JSON", code: "VALIDATION_ERROR" });
      noStack(res.text);
    }
  });

  test("invalid JSON on a public route is 400 too", async () => {
    const res = await app.http().request("POST", "/api/auth/register", {
      raw: "{oops",
      headers: { "content-type": "application/json" },
    });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: "Request body is not valid JSON", code: "VALIDATION_ERROR" });
  });

  test("a body over 1 MiB: 413 PAYLOAD_TOO_LARGE (JSON and form); just under is accepted", async () => {
    const big = JSON.stringify({ name: "x".repeat(1024 * 1024) });
    const res = await owner.owner.client.request("POST", "/api/workspaces", {
      raw: big,
      headers: { "content-type": "application/json" },
    });
    expect(res.status).toBe(413);
    expect(res.body).toEqual({ error: "Request body is too large", code: "PAYLOAD_TOO_LARGE" });

    const form = await app.http().request("POST", "/api/auth/callback/credentials", {
      raw: `email=${"a".repeat(1024 * 1024 + 10)}`,
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expect(form.status).toBe(413);
    expect(form.body).toEqual({ error: "Request body is too large", code: "PAYLOAD_TOO_LARGE" });

    // a body just under the limit parses (and then fails validation on the over-long name, not on size)
    const under = JSON.stringify({ name: "x".repeat(1024 * 1024 - 100) });
    const ok = await owner.owner.client.request("POST", "/api/workspaces", {
      raw: under,
      headers: { "content-type": "application/json" },
    });
    expect(ok.status).toBe(400);
    expect(ok.body.code).toBe("VALIDATION_ERROR");
    expect(ok.body.details.map((d: { field: string }) => d.field)).toContain("name");
  });

  test("parameter validation: 400 with details naming the field", async () => {
    const res = await owner.owner.client.post("/api/workspaces", { name: 42 });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: expect.any(String),
      code: "VALIDATION_ERROR",
      details: [expect.objectContaining({ field: "name" })],
    });
  });
});

describe("routing", () => {
  test.each([
    ["GET", "/api/nope"],
    ["GET", "/api/workspaces/x/nothing-here"],
    ["POST", "/api/health/extra"],
    ["GET", "/api/"],
    ["GET", "/nothing"],
  ])("%s %s: 404 ROUTE_NOT_FOUND", async (method, path) => {
    const res = await app.http().request(method, path);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: "Route not found", code: "ROUTE_NOT_FOUND" });
  });

  test.each([
    ["DELETE", "/api/health"],
    ["POST", "/api/openapi"],
    ["PUT", "/api/workspaces"],
    ["PATCH", "/api/workspaces"],
  ])("a wrong method on an existing path (%s %s): 404 ROUTE_NOT_FOUND", async (method, path) => {
    const res = await app.http().request(method, path);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: "Route not found", code: "ROUTE_NOT_FOUND" });
  });

  test("route-not-found is decided before authentication", async () => {
    const res = await app.http().get("/api/workspaces/some-id/not-a-thing", { bearer: "svc_invalid" });
    expect(res.status).toBe(404);
    expect(res.body.code).toBe("ROUTE_NOT_FOUND");
  });

  test("internal actions and moleculer-web's alias listing are not reachable", async () => {
    for (const path of [
      "/api/auth/verifyApiKey",
      "/api/auth.verifyApiKey",
      "/api/list-aliases",
      "/api/api/listAliases",
      "/api/$node/list",
    ]) {
      const res = await app.http().get(path);
      expect([path, res.status]).toEqual([path, res.status === 400 ? 400 : 404]);
      expect(res.text).not.toContain("keyHash");
    }
  });

  test("HEAD of a GET route answers as GET, without a body; HEAD of a missing route is 404", async () => {
    const head = await app.http().request("HEAD", "/api/health");
    expect(head.status).toBe(200);
    expect(head.headers.get("content-type")).toMatch(/^application\/json/);
    expect(head.text).toBe("");
    const missing = await app.http().request("HEAD", "/api/nope");
    expect(missing.status).toBe(404);
    expect(missing.text).toBe("");
  });

  test("HEAD never runs a POST action", async () => {
    const res = await app.http().request("HEAD", "/api/auth/forgot-password");
    expect(res.status).toBe(400); // the NextAuth catch-all under /api/auth answers other methods with 400
    const ws = await owner.owner.client.request("HEAD", "/api/workspaces");
    expect(ws.status).toBe(200);
    expect((await owner.owner.client.get("/api/workspaces")).body).toHaveLength(1);
  });

  test("OPTIONS without CORS runs no action: 404 ROUTE_NOT_FOUND, with or without Access-Control-Request-Method", async () => {
    const variants: Array<Record<string, string>> = [
      {},
      { "access-control-request-method": "POST", origin: "https://app.example.test" },
    ];
    for (const headers of variants) {
      const res = await owner.owner.client.request("OPTIONS", "/api/workspaces", { headers });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: "Route not found", code: "ROUTE_NOT_FOUND" });
      expect(res.headers.get("access-control-allow-origin")).toBeNull();
    }
    expect((await owner.owner.client.get("/api/workspaces")).body).toHaveLength(1);
  });

  test("no CORS headers when CORS_ORIGINS is unset", async () => {
    const res = await app.http().get("/api/health", { headers: { origin: "https://app.example.test" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("access-control-allow-origin")).toBeNull();
    expect(res.headers.get("access-control-allow-credentials")).toBeNull();
  });
});

describe("authentication errors", () => {
  test("no credential: 401 UNAUTHORIZED", async () => {
    for (const path of ["/api/workspaces", owner.ws, `${owner.ws}/members`]) {
      const res = await app.http().get(path);
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: expect.any(String), code: "UNAUTHORIZED" });
    }
  });

  test.each([
    ["an unknown svc_ key", "svc_0000000000000000000000000000000000000000"],
    ["a malformed key", "not-a-key"],
    ["an empty-ish bearer", "x"],
  ])("%s: 401 UNAUTHORIZED", async (_name, token) => {
    const res = await app.http().get(owner.ws, { bearer: token });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: expect.any(String), code: "UNAUTHORIZED" });
  });

  test("an Authorization header that is not Bearer: 401", async () => {
    const res = await app.http().get("/api/workspaces", {
      headers: { authorization: `Basic ${Buffer.from("a:b").toString("base64")}` },
    });
    expect(res.status).toBe(401);
    expect(res.body.code).toBe("UNAUTHORIZED");
  });

  test("a bad bearer on a public route is ignored, not refused", async () => {
    expect((await app.http().get("/api/health", { bearer: "svc_bad" })).status).toBe(200);
  });

  test("a valid key works where keys are accepted", async () => {
    const res = await app.http().get(owner.ws, { bearer: apiKey });
    expect(res.status).toBe(200);
  });

  test("a session-only route called with an API key: 401", async () => {
    for (const [method, path] of [
      ["GET", `${owner.ws}/keys`],
      ["POST", `${owner.ws}/keys`],
      ["GET", "/api/workspaces"],
      ["POST", "/api/workspaces"],
    ]) {
      const res = await app
        .http()
        .request(method, path, { bearer: apiKey, body: method === "GET" ? undefined : { name: "x" } });
      expect([method, path, res.status]).toEqual([method, path, 401]);
      expect(res.body).toEqual({ error: expect.any(String), code: "UNAUTHORIZED" });
    }
  });
});

describe("the request log", () => {
  test("one line per request with method, URL, status and duration, errors included", async () => {
    await app.http().get("/api/health?probe=log-ok");
    await app.http().get("/api/nope?probe=log-404");
    await app.http().get("/api/workspaces?probe=log-401");
    const log = lines.map(plain);
    expect(log.find((l) => l.includes("/api/health?probe=log-ok"))).toMatch(
      /^info api <= 200 GET \/api\/health\?probe=log-ok \[\+\d+\.\d+ m?s\]$/,
    );
    expect(log.find((l) => l.includes("/api/nope?probe=log-404"))).toMatch(
      /<= 404 GET \/api\/nope\?probe=log-404 \[\+\d+\.\d+ m?s\]/,
    );
    expect(log.find((l) => l.includes("/api/workspaces?probe=log-401"))).toMatch(
      /<= 401 GET \/api\/workspaces\?probe=log-401 \[\+/,
    );
  });
});

describe("unexpected failures", () => {
  test("a 500 is {error, code: INTERNAL} with no stack trace, and is logged with one", async () => {
    const db = new Client({ connectionString: app.databaseUrl });
    await db.connect();
    try {
      await db.query("ALTER TABLE workspaces RENAME TO workspaces_gone");
      const res = await owner.owner.client.get("/api/workspaces?probe=log-500");
      expect(res.status).toBe(500);
      expect(res.body).toEqual({ error: "Internal server error", code: "INTERNAL" });
      noStack(res.text);
      expect(res.text).not.toMatch(/workspaces_gone|relation|SELECT|sequelize/i);
      expect(
        lines
          .map(plain)
          .some(
            (l) => l.startsWith("error") && l.includes("/api/workspaces?probe=log-500") && /\n\s+at /.test(l),
          ),
      ).toBe(true);
      expect(
        lines.map(plain).find((l) => l.includes("<= 500 GET /api/workspaces?probe=log-500")),
      ).toBeDefined();
    } finally {
      await db.query("ALTER TABLE workspaces_gone RENAME TO workspaces");
      await db.end();
    }
    expect((await owner.owner.client.get("/api/workspaces")).status).toBe(200);
  });
});

describe("a service out of reach", () => {
  test("an action's call to a service no node runs now is 503 SERVICE_UNAVAILABLE, not a missing route", async () => {
    app.broker.createService({
      name: "outage-probe",
      settings: { rest: "/" },
      actions: {
        ask: {
          rest: "POST /outage-probe",
          auth: "public",
          handler: (ctx) => ctx.call("nowhere.answer"),
        },
      },
    });
    await app.broker.waitForServices(["outage-probe"], 10_000);
    const res = await waitFor(async () => {
      const answer = await app.http().post("/api/outage-probe", {});
      return answer.status === 404 ? undefined : answer;
    });
    expect(res.status).toBe(503);
    expect(res.body.code).toBe("SERVICE_UNAVAILABLE");
    noStack(res.text);
  });
});
