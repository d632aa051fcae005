import crypto from "node:crypto";
import { Client } from "pg";
import { authSecret } from "../../../lib/auth-secret";
import { encodeSession } from "../../../lib/session-token";
import { startApp, type TestApp } from "../../helpers/app";
import { HttpClient, uniqueEmail } from "../../helpers/http";

/**
 * Abuse limits that cannot be turned against users. The password hash cost
 * is set beyond what scrypt accepts, so any hash computed here would fail
 * the request with a 500: a reset with a wrong token that answers 400 proves
 * the token is checked before the password is hashed. Users are made in
 * SQL and signed in with a minted session token for the same reason.
 */
const PUBLIC_URL = "http://app.example.test";
const ALLOWED = "https://partner.example";
let app: TestApp;
let db: Client;

beforeAll(async () => {
  app = await startApp({
    services: ["api", "auth", "workspaces"],
    env: { PASSWORD_HASH_COST: "40", PUBLIC_URL, CORS_ORIGINS: ALLOWED, REDIS_URL: undefined },
  });
  db = new Client({ connectionString: app.databaseUrl });
  await db.connect();
});
afterAll(async () => {
  await db.end();
  await app.stop();
});

async function sessionClient(): Promise<HttpClient> {
  const id = crypto.randomUUID();
  const email = uniqueEmail("abuse");
  await db.query("INSERT INTO users (id, name, email, password_hash) VALUES ($1, 'Abe', $2, 'x')", [
    id,
    email,
  ]);
  const client = app.http();
  client.cookies.set(
    "next-auth.session-token",
    await encodeSession({ sub: id, name: "Abe", email }, authSecret()),
  );
  return client;
}

describe("reset-password", () => {
  test("a wrong token is refused before any password hash is computed", async () => {
    const res = await app
      .http()
      .post("/api/auth/reset-password", { token: "f".repeat(64), password: "new password" });
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual([{ field: "token", message: expect.any(String) }]);
  });

  test("20 tries per client IP per 15 minutes, then 429 with Retry-After; other IPs go on", async () => {
    const guesser = app.http();
    for (let i = 0; i < 20; i++) {
      expect(
        (await guesser.post("/api/auth/reset-password", { token: `guess-${i}`, password: "new password" }))
          .status,
      ).toBe(400);
    }
    const limited = await guesser.post("/api/auth/reset-password", {
      token: "guess-21",
      password: "new password",
    });
    expect(limited.status).toBe(429);
    expect(limited.body.code).toBe("RATE_LIMITED");
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(
      (await app.http().post("/api/auth/reset-password", { token: "x", password: "new password" })).status,
    ).toBe(400);
  });
});

describe("cross-site writes with the session cookie", () => {
  test("a form post to /members from a foreign Origin is 403, and adds nobody", async () => {
    const owner = await sessionClient();
    const ws = (await owner.post("/api/workspaces", { name: "Target" })).body.id as string;
    const res = await owner.request("POST", `/api/workspaces/${ws}/members`, {
      form: { email: "attacker@evil.example", role: "ADMIN" },
      headers: { origin: "https://evil.example" },
    });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: expect.stringMatching(/cross-site/), code: "FORBIDDEN" });
    expect((await owner.get(`/api/workspaces/${ws}/members`)).body).toHaveLength(1);
  });

  test.each([
    ["Sec-Fetch-Site cross-site", { "sec-fetch-site": "cross-site", origin: "https://evil.example" }],
    [
      "Sec-Fetch-Site same-site from a sibling host",
      { "sec-fetch-site": "same-site", origin: "http://other.example.test" },
    ],
    ["a foreign Origin", { origin: "https://evil.example" }],
    ["Origin null", { origin: "null" }],
  ])("%s is refused", async (_name, headers) => {
    const client = await sessionClient();
    expect((await client.post("/api/workspaces", { name: "X" }, { headers })).status).toBe(403);
  });

  test.each([
    ["no Origin (curl, apps)", {}],
    ["our public origin", { origin: PUBLIC_URL, "sec-fetch-site": "same-origin" }],
    ["an allowed CORS origin", { origin: ALLOWED, "sec-fetch-site": "cross-site" }],
    ["the host the request came to", { "sec-fetch-site": "same-origin" }],
  ])("%s is allowed", async (_name, headers) => {
    const client = await sessionClient();
    expect((await client.post("/api/workspaces", { name: "X" }, { headers })).status).toBe(201);
  });

  test("the same Origin as the Host header is same-origin even when PUBLIC_URL differs", async () => {
    const client = await sessionClient();
    const origin = new URL(app.baseUrl).origin;
    expect((await client.post("/api/workspaces", { name: "X" }, { headers: { origin } })).status).toBe(201);
  });

  test("reads are not refused; API keys are not affected", async () => {
    const owner = await sessionClient();
    const ws = (await owner.post("/api/workspaces", { name: "Keys" })).body.id as string;
    expect((await owner.get("/api/workspaces", { headers: { origin: "https://evil.example" } })).status).toBe(
      200,
    );
    const key = (await owner.post(`/api/workspaces/${ws}/keys`, { name: "k", scopes: ["contacts.read"] }))
      .body.key;
    const res = await app.http().get(`/api/workspaces/${ws}`, {
      bearer: key,
      headers: { origin: "https://evil.example", "sec-fetch-site": "cross-site" },
    });
    expect(res.status).toBe(200);
  });

  test("public routes keep their own rules (NextAuth's csrf token, the registration limit)", async () => {
    const res = await app
      .http()
      .post(
        "/api/auth/callback/credentials",
        { email: "nobody@example.test", password: "whatever", json: "true" },
        { headers: { origin: "https://evil.example" } },
      );
    expect(res.status).not.toBe(403);
  });
});
