import crypto from "node:crypto";
import { EncryptJWT } from "jose";
import { startApp, type TestApp } from "../../helpers/app";
import { HttpClient, uniqueEmail } from "../../helpers/http";
import { database } from "../../../lib/database";
import { deriveEncryptionKey } from "../../../lib/session-token";

/** Only the services this suite exercises (other areas are tested on their own). */
const SERVICES = ["api", "auth", "workspaces"];

/**
 * NextAuth v4 credentials conformance (reference section 10), through the
 * real gateway. The secret is the reference's fixture secret, so the token
 * minted by next-auth itself (section 6.5) must authenticate.
 */
const SECRET = "conformance-test-secret-do-not-use";
const ORIGIN = "http://localhost:3999";
const BASE = `${ORIGIN}/api/auth`;
const FIXTURE =
  "eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2R0NNIn0..KXfZ-Ug2I8KoOOAZ.gaiAb_oKAghYpmStZFbLUvF_3x0cKSCZ4vbLtICeCTUGLcxuhJUP4NSGmOp5FKN21qNyMVeY3godJp6wWHB21M8lTdBh5v15Oc0xvmQUbdJ8q2SRw8AhXSdZ2sTcOmytyH6rok_zA3MG1L7Tz-vUgbIQx5dzNxdTjk9MvQo4weMIpcrk6l4sw4hdDklHcXWgZgMoCFf06iChmh4xjgetsTc.F-Yfi0s25YCqZJH1n4LVBg";
const CREDENTIALS_ERROR = `${BASE}/error?error=CredentialsSignin&provider=credentials`;

let app: TestApp;
let user: { id: string; name: string; email: string; password: string };

beforeAll(async () => {
  app = await startApp({
    services: SERVICES,
    env: { AUTH_SECRET: SECRET, PUBLIC_URL: ORIGIN, CORS_ORIGINS: undefined },
  });
  user = { id: "", name: "Nina Auth", email: uniqueEmail("nina"), password: "correct horse battery" };
  const res = await app
    .http()
    .post("/api/auth/register", { name: user.name, email: user.email, password: user.password });
  expect(res.status).toBe(201);
  user.id = res.body.id;
  // The fixture token's user, as the service that minted it would have had it.
  await (
    await database()
  ).query(
    `INSERT INTO users (id, name, email, password_hash) VALUES ('user_1', 'Alice Example', :email, 'x')`,
    { replacements: { email: uniqueEmail("alice") } },
  );
});
afterAll(() => app.stop());

const cookieNamed = (res: { setCookies: string[] }, name: string) =>
  res.setCookies.find((c) => c.startsWith(`${name}=`));

async function withCsrf(): Promise<{ client: HttpClient; token: string }> {
  const client = app.http();
  const res = await client.get("/api/auth/csrf");
  return { client, token: res.body.csrfToken };
}

async function signedIn(): Promise<HttpClient> {
  const { client, token } = await withCsrf();
  const res = await client.request("POST", "/api/auth/callback/credentials", {
    form: { csrfToken: token, email: user.email, password: user.password, json: "true" },
  });
  expect(res.status).toBe(200);
  return client;
}

function tokenExpiringAt(
  exp: number,
  claims: Record<string, unknown> = { sub: user.id, name: user.name, email: user.email },
) {
  return new EncryptJWT(claims)
    .setProtectedHeader({ alg: "dir", enc: "A256GCM" })
    .setIssuedAt(exp - 3600)
    .setExpirationTime(exp)
    .setJti(crypto.randomUUID())
    .encrypt(deriveEncryptionKey(SECRET));
}

describe("GET /api/auth/csrf", () => {
  test("a 64-hex token and the cookie token%7Chash with NextAuth's attributes, not cached", async () => {
    const client = app.http();
    const res = await client.get("/api/auth/csrf");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ csrfToken: expect.stringMatching(/^[0-9a-f]{64}$/) });
    const token = res.body.csrfToken;
    const hash = crypto.createHash("sha256").update(`${token}${SECRET}`).digest("hex");
    expect(cookieNamed(res, "next-auth.csrf-token")).toBe(
      `next-auth.csrf-token=${token}%7C${hash}; Path=/; HttpOnly; SameSite=Lax`,
    );
    expect(res.headers.get("cache-control")).toContain("no-store");
  });

  test("a valid cookie is reused: same token, no new csrf cookie", async () => {
    const { client, token } = await withCsrf();
    const again = await client.get("/api/auth/csrf");
    expect(again.body.csrfToken).toBe(token);
    expect(cookieNamed(again, "next-auth.csrf-token")).toBeUndefined();
  });

  test("a cookie with a raw | is accepted too", async () => {
    const { client, token } = await withCsrf();
    client.cookies.set(
      "next-auth.csrf-token",
      decodeURIComponent(client.cookies.get("next-auth.csrf-token")!),
    );
    expect((await client.get("/api/auth/csrf")).body.csrfToken).toBe(token);
  });

  test.each([
    ["a forged hash", `${"a".repeat(64)}%7C${"b".repeat(64)}`],
    ["malformed percent-encoding", "%E0%A4%A"],
    ["garbage", "nonsense"],
  ])("%s is replaced by a fresh token and cookie", async (_name, value) => {
    const client = app.http();
    client.cookies.set("next-auth.csrf-token", value);
    const res = await client.get("/api/auth/csrf");
    expect(res.status).toBe(200);
    expect(res.body.csrfToken).toMatch(/^[0-9a-f]{64}$/);
    expect(res.body.csrfToken).not.toBe("a".repeat(64));
    expect(cookieNamed(res, "next-auth.csrf-token")).toBeDefined();
  });
});

describe("POST /api/auth/callback/credentials", () => {
  test("form with csrf and json=true: 200 {url} and the session cookie (JWE, 30 days, HttpOnly, Lax)", async () => {
    const { client, token } = await withCsrf();
    const res = await client.request("POST", "/api/auth/callback/credentials", {
      form: { csrfToken: token, email: user.email, password: user.password, json: "true" },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ url: ORIGIN });
    const cookie = cookieNamed(res, "next-auth.session-token")!;
    expect(cookie).toMatch(
      /^next-auth\.session-token=eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2R0NNIn0\.\.[\w-]+\.[\w-]+\.[\w-]+; Path=\/; Expires=[^;]+; HttpOnly; SameSite=Lax$/,
    );
    const expires = Date.parse(/Expires=([^;]+)/.exec(cookie)![1]);
    expect(Math.abs(expires - (Date.now() + 30 * 86400_000))).toBeLessThan(60_000);
    expect(cookie).not.toMatch(/Max-Age/i);
    expect(cookie).not.toMatch(/Secure/);
  });

  test("form without json: 302 with Location and the session cookie", async () => {
    const { client, token } = await withCsrf();
    const res = await client.request("POST", "/api/auth/callback/credentials", {
      form: { csrfToken: token, email: user.email, password: user.password, callbackUrl: "/dashboard" },
    });
    expect(res.status).toBe(302);
    expect(res.headers.get("location")).toBe(`${ORIGIN}/dashboard`);
    expect(cookieNamed(res, "next-auth.session-token")).toBeDefined();
  });

  test.each(["false", "1", "TRUE"])('form with json=%s is not the string "true": 302', async (json) => {
    const { client, token } = await withCsrf();
    const res = await client.request("POST", "/api/auth/callback/credentials", {
      form: { csrfToken: token, email: user.email, password: user.password, json },
    });
    expect(res.status).toBe(302);
    expect(res.headers.get("location")).toBe(ORIGIN);
  });

  test.each([
    ['json "true"', { json: "true" }],
    ["json true (boolean)", { json: true }],
    ["no json field", {}],
  ])(
    "JSON body (%s) needs no csrf and answers 200 {url} (contract: a JSON body gets JSON)",
    async (_name, extra) => {
      const client = app.http();
      const res = await client.post("/api/auth/callback/credentials", {
        email: user.email,
        password: user.password,
        ...extra,
      });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ url: ORIGIN });
      expect(cookieNamed(res, "next-auth.session-token")).toBeDefined();
      expect((await client.get("/api/auth/session")).body.user.id).toBe(user.id);
    },
  );

  test("the email is matched case-insensitively and trimmed", async () => {
    const res = await app.http().post("/api/auth/callback/credentials", {
      email: `  ${user.email.toUpperCase()} `,
      password: user.password,
    });
    expect(res.status).toBe(200);
  });

  test("bad password: 401 {url: ...CredentialsSignin} with json, 302 there without; never a session cookie", async () => {
    const { client, token } = await withCsrf();
    const asJson = await client.request("POST", "/api/auth/callback/credentials", {
      form: { csrfToken: token, email: user.email, password: "wrong password", json: "true" },
    });
    expect(asJson.status).toBe(401);
    expect(asJson.body).toEqual({ url: CREDENTIALS_ERROR });
    expect(cookieNamed(asJson, "next-auth.session-token")).toBeUndefined();

    const redirected = await client.request("POST", "/api/auth/callback/credentials", {
      form: { csrfToken: token, email: user.email, password: "wrong password" },
    });
    expect(redirected.status).toBe(302);
    expect(redirected.headers.get("location")).toBe(CREDENTIALS_ERROR);
    expect(cookieNamed(redirected, "next-auth.session-token")).toBeUndefined();

    const json = await app.http().post("/api/auth/callback/credentials", {
      email: user.email,
      password: "wrong password",
      json: "true",
    });
    expect(json.status).toBe(401);
    expect(json.body).toEqual({ url: CREDENTIALS_ERROR });
  });

  test("an unknown email answers exactly as a wrong password; missing fields too", async () => {
    for (const body of [
      { email: uniqueEmail("ghost"), password: "whatever-password" },
      { email: user.email },
      {},
    ]) {
      const res = await app.http().post("/api/auth/callback/credentials", { ...body, json: "true" });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ url: CREDENTIALS_ERROR });
    }
  });

  test("csrf failure (no cookie, wrong token, no token): 200 {url: .../signin?csrf=true} or 302, no session, fresh csrf cookie", async () => {
    const expected = `${BASE}/signin?csrf=true`;
    const noCookie = app.http();
    const res = await noCookie.request("POST", "/api/auth/callback/credentials", {
      form: { csrfToken: "a".repeat(64), email: user.email, password: user.password, json: "true" },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ url: expected });
    expect(cookieNamed(res, "next-auth.session-token")).toBeUndefined();
    expect(cookieNamed(res, "next-auth.csrf-token")).toBeDefined();

    const { client } = await withCsrf();
    const wrong = await client.request("POST", "/api/auth/callback/credentials", {
      form: { csrfToken: "b".repeat(64), email: user.email, password: user.password, json: "true" },
    });
    expect(wrong.body).toEqual({ url: expected });
    expect(cookieNamed(wrong, "next-auth.session-token")).toBeUndefined();
    expect(cookieNamed(wrong, "next-auth.csrf-token")).toBeUndefined(); // the valid cookie is kept

    const missing = await client.request("POST", "/api/auth/callback/credentials", {
      form: { email: user.email, password: user.password },
    });
    expect(missing.status).toBe(302);
    expect(missing.headers.get("location")).toBe(expected);
    expect(cookieNamed(missing, "next-auth.session-token")).toBeUndefined();
    expect((await client.get("/api/auth/session")).body).toEqual({});
  });

  test.each([
    ["/dashboard", `${ORIGIN}/dashboard`],
    ["/a?b=c#d", `${ORIGIN}/a?b=c#d`],
    [`${ORIGIN}/settings`, `${ORIGIN}/settings`],
    ["https://evil.example/x", ORIGIN],
    ["http://localhost:3999.evil.example/", ORIGIN],
    ["javascript:alert(1)", ORIGIN],
    ["not a url", ORIGIN],
    ["", ORIGIN],
  ])(
    "callbackUrl %j resolves to %s and is stored in the callback-url cookie",
    async (callbackUrl, expected) => {
      const { client, token } = await withCsrf();
      const res = await client.request("POST", "/api/auth/callback/credentials", {
        form: { csrfToken: token, email: user.email, password: user.password, callbackUrl, json: "true" },
      });
      expect(res.body).toEqual({ url: expected });
      expect(cookieNamed(res, "next-auth.callback-url")).toBe(
        `next-auth.callback-url=${encodeURIComponent(expected)}; Path=/; HttpOnly; SameSite=Lax`,
      );
    },
  );
});

describe("GET /api/auth/session", () => {
  test("anonymous: {} and no session cookie", async () => {
    const res = await app.http().get("/api/auth/session");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({});
    expect(cookieNamed(res, "next-auth.session-token")).toBeUndefined();
  });

  test.each([
    ["garbage", async () => "not-a-jwe"],
    ["expired 60 s ago", async () => tokenExpiringAt(Math.floor(Date.now() / 1000) - 60)],
    [
      "another secret",
      () =>
        new EncryptJWT({ sub: user.id })
          .setProtectedHeader({ alg: "dir", enc: "A256GCM" })
          .setExpirationTime("1h")
          .encrypt(deriveEncryptionKey("another-secret")),
    ],
    [
      "no sub claim",
      async () =>
        tokenExpiringAt(Math.floor(Date.now() / 1000) + 3600, { name: "x", email: "x@example.test" }),
    ],
  ])("%s: {} and the cookie cleared with Max-Age=0", async (_name, make) => {
    const client = app.http();
    client.cookies.set("next-auth.session-token", await make());
    const res = await client.get("/api/auth/session");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({});
    expect(cookieNamed(res, "next-auth.session-token")).toBe(
      "next-auth.session-token=; Max-Age=0; Path=/; HttpOnly; SameSite=Lax",
    );
    expect(client.cookies.has("next-auth.session-token")).toBe(false);
  });

  // 10 s, not 14: the whole second dropped by the floor and a slow request under load left too thin a margin.
  test("expired 10 s ago is still accepted (15 s tolerance)", async () => {
    const client = app.http();
    client.cookies.set("next-auth.session-token", await tokenExpiringAt(Math.floor(Date.now() / 1000) - 10));
    expect((await client.get("/api/auth/session")).body.user).toEqual({
      id: user.id,
      name: user.name,
      email: user.email,
    });
  });

  test("signed in: {user:{id,name,email}, expires} and the cookie re-issued with a new token", async () => {
    const client = await signedIn();
    const before = client.cookies.get("next-auth.session-token");
    const res = await client.get("/api/auth/session");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      user: { id: user.id, name: user.name, email: user.email },
      expires: expect.any(String),
    });
    expect(res.body.expires).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(Math.abs(Date.parse(res.body.expires) - (Date.now() + 30 * 86400_000))).toBeLessThan(60_000);
    const reissued = cookieNamed(res, "next-auth.session-token")!;
    expect(reissued).toMatch(/; Path=\/; Expires=[^;]+; HttpOnly; SameSite=Lax$/);
    expect(client.cookies.get("next-auth.session-token")).not.toBe(before);
    expect(res.headers.get("cache-control")).toContain("no-store");
  });

  test("the token minted by next-auth 4.24.11 (reference 6.5) is a valid session", async () => {
    const client = app.http();
    client.cookies.set("next-auth.session-token", FIXTURE);
    expect((await client.get("/api/auth/session")).body.user).toEqual({
      id: "user_1",
      name: "Alice Example",
      email: "alice@example.com",
    });
  });

  test("chunked cookies (.0, .1) are joined", async () => {
    const client = await signedIn();
    const token = client.cookies.get("next-auth.session-token")!;
    client.cookies.delete("next-auth.session-token");
    client.cookies.set("next-auth.session-token.1", token.slice(100));
    client.cookies.set("next-auth.session-token.0", token.slice(0, 100));
    expect((await client.get("/api/auth/session")).body.user?.id).toBe(user.id);
  });
});

describe("session cookies on API calls", () => {
  test("the next-auth fixture cookie authenticates an API call; no cookie is 401", async () => {
    const client = app.http();
    client.cookies.set("next-auth.session-token", FIXTURE);
    const res = await client.get("/api/workspaces");
    expect(res.status).toBe(200);
    expect(res.body).toEqual([]);
    const anonymous = await app.http().get("/api/workspaces");
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toEqual({ error: expect.any(String), code: "UNAUTHORIZED" });
  });

  test("the session JWE as a bearer token (next-auth getToken) authenticates too", async () => {
    expect((await app.http().get("/api/workspaces", { bearer: FIXTURE })).status).toBe(200);
    expect((await app.http().get("/api/workspaces", { bearer: encodeURIComponent(FIXTURE) })).status).toBe(
      200,
    );
  });

  test("chunked session cookies authenticate an API call", async () => {
    const client = await signedIn();
    const token = client.cookies.get("next-auth.session-token")!;
    client.cookies.delete("next-auth.session-token");
    client.cookies.set("next-auth.session-token.0", token.slice(0, 50));
    client.cookies.set("next-auth.session-token.1", token.slice(50));
    expect((await client.get("/api/workspaces")).status).toBe(200);
  });

  test("expired, tampered, other-secret or malformed session tokens are 401", async () => {
    const now = Math.floor(Date.now() / 1000);
    const tampered = FIXTURE.slice(0, -2) + (FIXTURE.endsWith("Bg") ? "Cg" : "Bg");
    const otherSecret = await new EncryptJWT({ sub: user.id })
      .setProtectedHeader({ alg: "dir", enc: "A256GCM" })
      .setExpirationTime("1h")
      .encrypt(deriveEncryptionKey("another-secret"));
    for (const token of [await tokenExpiringAt(now - 16), tampered, otherSecret, "%E0%A4%A"]) {
      const client = app.http();
      client.cookies.set("next-auth.session-token", token);
      const res = await client.get("/api/workspaces");
      expect(res.status).toBe(401);
      expect(res.body.code).toBe("UNAUTHORIZED");
      const asBearer = await app.http().get("/api/workspaces", { bearer: token });
      expect(asBearer.status).toBe(401);
      expect(asBearer.body.code).toBe("UNAUTHORIZED");
    }
  });
});

describe("POST /api/auth/signout", () => {
  test("with csrf and json=true: {url} and every session cookie and chunk cleared", async () => {
    const client = await signedIn();
    client.cookies.set("next-auth.session-token.0", "stale");
    client.cookies.set("next-auth.session-token.1", "stale");
    const token = (await client.get("/api/auth/csrf")).body.csrfToken;
    const res = await client.request("POST", "/api/auth/signout", {
      form: { csrfToken: token, callbackUrl: "/bye", json: "true" },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ url: `${ORIGIN}/bye` });
    for (const name of [
      "next-auth.session-token",
      "next-auth.session-token.0",
      "next-auth.session-token.1",
    ]) {
      expect(cookieNamed(res, name)).toBe(`${name}=; Max-Age=0; Path=/; HttpOnly; SameSite=Lax`);
    }
    expect((await client.get("/api/auth/session")).body).toEqual({});
  });

  test("without json: 302 to the callback url", async () => {
    const client = await signedIn();
    const token = (await client.get("/api/auth/csrf")).body.csrfToken;
    const res = await client.request("POST", "/api/auth/signout", { form: { csrfToken: token } });
    expect(res.status).toBe(302);
    expect(res.headers.get("location")).toBe(ORIGIN);
    expect(cookieNamed(res, "next-auth.session-token")).toMatch(/Max-Age=0/);
  });

  test("a bad csrf token signs nobody out: {url: .../signout?csrf=true}", async () => {
    const client = await signedIn();
    const res = await client.request("POST", "/api/auth/signout", {
      form: { csrfToken: "bogus", json: "true" },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ url: `${BASE}/signout?csrf=true` });
    expect(cookieNamed(res, "next-auth.session-token")).toBeUndefined();
    expect((await client.get("/api/auth/session")).body.user?.id).toBe(user.id);
  });
});

describe("the rest of the NextAuth surface", () => {
  test("GET /api/auth/providers lists credentials with absolute URLs and sets no cookie", async () => {
    const res = await app.http().get("/api/auth/providers");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      credentials: {
        id: "credentials",
        name: "Credentials",
        type: "credentials",
        signinUrl: `${BASE}/signin/credentials`,
        callbackUrl: `${BASE}/callback/credentials`,
      },
    });
    expect(res.setCookies).toEqual([]);
  });

  test("GET /api/auth/callback/credentials sends the browser to the error page (NextAuth answers 500 here)", async () => {
    const res = await app.http().get("/api/auth/callback/credentials");
    expect(res.status).toBe(302);
    expect(res.headers.get("location")).toBe(`${BASE}/error?error=Callback`);
    const error = await app.http().get(`${BASE.slice(ORIGIN.length)}/error?error=Callback`);
    expect(error.headers.get("location")).toBe(`${BASE}/signin?error=Callback`);
  });

  test.each([
    ["DELETE", "/api/auth/session"],
    ["PUT", "/api/auth/csrf"],
    ["PATCH", "/api/auth/providers"],
    ["GET", "/api/auth/foo"],
    ["POST", "/api/auth/foo"],
    ["POST", "/api/auth/callback/foo"],
    ["GET", "/api/auth/callback/foo"],
    ["DELETE", "/api/auth/callback/credentials"],
  ])("%s %s is 400 text", async (method, path) => {
    const res = await app.http().request(method, path);
    expect(res.status).toBe(400);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain/);
    expect(res.text).toBe(`Error: This action with HTTP ${method} is not supported by NextAuth.js`);
  });

  test("GET /api/auth/signin sends to the custom page with the callbackUrl", async () => {
    const res = await app.http().get("/api/auth/signin?callbackUrl=%2Fdashboard");
    expect(res.status).toBe(302);
    expect(res.headers.get("location")).toBe("/auth/signin?callbackUrl=%2Fdashboard");
    const plain = await app.http().get("/api/auth/signin");
    expect(plain.headers.get("location")).toBe(`/auth/signin?callbackUrl=${encodeURIComponent(ORIGIN)}`);
  });

  test("GET /api/auth/error?error=CredentialsSignin continues the chain to the sign-in page", async () => {
    const res = await app.http().get("/api/auth/error?error=CredentialsSignin");
    expect(res.status).toBe(302);
    expect(res.headers.get("location")).toBe(`${BASE}/signin?error=CredentialsSignin`);
  });

  test("POST /api/auth/_log is 200 with an empty body", async () => {
    const res = await app.http().post("/api/auth/_log", { level: "error", code: "x" });
    expect(res.status).toBe(200);
    expect(res.text).toBe("");
  });

  test("GET /auth/signin serves the HTML page that posts the credentials and csrf token to the callback", async () => {
    const res = await app.http().get("/auth/signin");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    const form = /<form[^>]*>/.exec(res.text)?.[0] ?? "";
    expect(form).toMatch(/method="post"/i);
    expect(form).toMatch(/action="\/api\/auth\/callback\/credentials"/);
    for (const field of ["csrfToken", "email", "password", "callbackUrl"])
      expect(res.text).toContain(`name="${field}"`);
    // Its script (a file: the pages' policy runs no inline script) fetches the csrf token.
    expect(res.text).toContain('<script src="/signin.js"></script>');
    expect((await app.http().get("/signin.js")).text).toContain("/api/auth/csrf");
  });
});

describe("sign-in throttling", () => {
  test("per email and IP: after 10 failures that IP gets 429 even with the right password; another IP signs in", async () => {
    const email = uniqueEmail("throttle");
    const password = "correct horse battery";
    expect((await app.http().post("/api/auth/register", { name: "T", email, password })).status).toBe(201);
    const attacker = app.http();
    for (let i = 0; i < 10; i++) {
      const res = await attacker.post("/api/auth/callback/credentials", {
        email,
        password: `wrong-${i}`,
        json: "true",
      });
      expect(res.status).toBe(401);
    }
    const blocked = await attacker.post("/api/auth/callback/credentials", {
      email: email.toUpperCase(),
      password,
    });
    expect(blocked.status).toBe(429);
    expect(blocked.body).toEqual({ error: expect.any(String), code: "RATE_LIMITED" });
    expect(Number(blocked.headers.get("retry-after"))).toBeGreaterThan(0);
    // the owner, from another IP, is not locked out
    expect((await app.http().post("/api/auth/callback/credentials", { email, password })).status).toBe(200);
  });

  test("failures for one email from many IPs back off untrusted clients, never a device the owner signed in from", async () => {
    const email = uniqueEmail("spread");
    const password = "correct horse battery";
    await app.http().post("/api/auth/register", { name: "T", email, password });
    const owner = app.http();
    expect((await owner.post("/api/auth/callback/credentials", { email, password })).status).toBe(200);
    expect(owner.cookies.get("svc.trusted-device")).toEqual(expect.any(String));
    for (let i = 0; i < 20; i++) {
      // a new client (so a new IP) each time
      const res = await app.http().post("/api/auth/callback/credentials", { email, password: `wrong-${i}` });
      expect(res.status).toBe(401);
    }
    const stranger = await app.http().post("/api/auth/callback/credentials", { email, password });
    expect(stranger.status).toBe(429);
    expect(Number(stranger.headers.get("retry-after"))).toBeGreaterThan(0);
    // the owner's browser carries its device cookie: no backoff
    expect((await owner.post("/api/auth/callback/credentials", { email, password })).status).toBe(200);
    // a device cookie proves one email only
    const forged = app.http();
    forged.cookies.set("svc.trusted-device", owner.cookies.get("svc.trusted-device")!);
    const other = uniqueEmail("other");
    expect((await forged.post("/api/auth/callback/credentials", { email: other, password })).status).toBe(
      401,
    );
    forged.cookies.set("svc.trusted-device", "0123.abcd");
    expect((await forged.post("/api/auth/callback/credentials", { email, password })).status).toBe(429);
    // other accounts are not affected
    expect(
      (
        await app
          .http()
          .post("/api/auth/callback/credentials", { email: user.email, password: user.password })
      ).status,
    ).toBe(200);
  });

  test("a successful sign-in clears the email's failures", async () => {
    const email = uniqueEmail("reset-count");
    const password = "correct horse battery";
    await app.http().post("/api/auth/register", { name: "T", email, password });
    for (let i = 0; i < 9; i++)
      await app.http().post("/api/auth/callback/credentials", { email, password: "wrong-password" });
    expect((await app.http().post("/api/auth/callback/credentials", { email, password })).status).toBe(200);
    for (let i = 0; i < 9; i++) {
      expect(
        (await app.http().post("/api/auth/callback/credentials", { email, password: "wrong-password" }))
          .status,
      ).toBe(401);
    }
  });
});
