import { startApp, type TestApp } from "../../helpers/app";
import { uniqueEmail } from "../../helpers/http";

/**
 * The real NextAuth v4 client library against the running service:
 * `next-auth/react` (getProviders, getCsrfToken, signIn, getSession, the
 * session's `update()`, signOut) as a browser page would call it, and
 * `next-auth/jwt` (decode our cookie, mint a token we accept). Node's fetch
 * gets a cookie jar, which is what a browser gives the library.
 */
const SECRET = "nextauth-client-test-secret";

type NextAuthReact = typeof import("next-auth/react");
type NextAuthJwt = typeof import("next-auth/jwt");

let app: TestApp;
let client: NextAuthReact;
let jwt: NextAuthJwt;
const jar = new Map<string, string>();
const realFetch = globalThis.fetch;
const clientIp = `198.18.${Math.floor(Math.random() * 256)}.${Math.floor(Math.random() * 256)}`;
const user = { id: "", name: "Nora Next", email: uniqueEmail("nora"), password: "correct horse battery" };

/** A browser's cookie handling for the service's origin. */
async function fetchWithJar(input: string | URL | Request, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  headers.set("x-forwarded-for", clientIp);
  if (jar.size && !headers.has("cookie"))
    headers.set("cookie", [...jar].map(([k, v]) => `${k}=${v}`).join("; "));
  const res = await realFetch(input, { ...init, headers });
  for (const cookie of res.headers.getSetCookie()) {
    const [pair, ...attributes] = cookie.split(";");
    const name = pair.slice(0, pair.indexOf("=")).trim();
    const value = pair.slice(pair.indexOf("=") + 1).trim();
    if (value === "" || attributes.some((a) => /max-age=0/i.test(a))) jar.delete(name);
    else jar.set(name, value);
  }
  return res;
}

beforeAll(async () => {
  app = await startApp({ services: ["api", "auth", "workspaces"], env: { AUTH_SECRET: SECRET } });
  // The library reads its base URL when it loads.
  process.env.NEXTAUTH_URL = app.baseUrl;
  client = require("next-auth/react");
  jwt = require("next-auth/jwt");
  globalThis.fetch = fetchWithJar as typeof fetch;
  const res = await fetchWithJar(`${app.baseUrl}/api/auth/register`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name: user.name, email: user.email, password: user.password }),
  });
  user.id = ((await res.json()) as { id: string }).id;
});
afterAll(async () => {
  globalThis.fetch = realFetch;
  delete process.env.NEXTAUTH_URL;
  await app.stop();
});
beforeEach(() => jar.clear());

test("getProviders and getCsrfToken", async () => {
  const providers = await client.getProviders();
  expect(providers).toEqual({
    credentials: {
      id: "credentials",
      name: "Credentials",
      type: "credentials",
      signinUrl: expect.stringMatching(/\/api\/auth\/signin\/credentials$/),
      callbackUrl: expect.stringMatching(/\/api\/auth\/callback\/credentials$/),
    },
  });
  expect(await client.getCsrfToken()).toMatch(/^[0-9a-f]{64}$/);
  expect(jar.get("next-auth.csrf-token")).toMatch(/^[0-9a-f]{64}%7C[0-9a-f]{64}$/);
});

test('signIn("credentials") with redirect: false, then getSession', async () => {
  const wrong = await client.signIn("credentials", {
    email: user.email,
    password: "wrong password",
    redirect: false,
    callbackUrl: "/dashboard",
  });
  expect(wrong).toEqual({ error: "CredentialsSignin", status: 401, ok: false, url: null });
  expect(await client.getSession()).toBeNull();

  const right = await client.signIn("credentials", {
    email: user.email,
    password: user.password,
    redirect: false,
    callbackUrl: "/dashboard",
  });
  expect(right).toEqual({ error: null, status: 200, ok: true, url: expect.stringMatching(/\/dashboard$/) });
  const session = await client.getSession();
  expect(session).toEqual({
    user: { id: user.id, name: user.name, email: user.email },
    expires: expect.any(String),
  });
});

test("next-auth/jwt decodes the service's session cookie", async () => {
  await client.signIn("credentials", {
    email: user.email,
    password: user.password,
    redirect: false,
    callbackUrl: "/",
  });
  const token = jar.get("next-auth.session-token")!;
  const claims = await jwt.decode({ token, secret: SECRET });
  expect(claims).toMatchObject({ sub: user.id, name: user.name, email: user.email });
  expect(Number(claims!.exp) - Math.floor(Date.now() / 1000)).toBeGreaterThan(29 * 24 * 3600);
  expect(claims!.jti).toEqual(expect.any(String));
});

test("a token minted by next-auth/jwt encode is a session the service accepts", async () => {
  const token = await jwt.encode({
    token: { sub: user.id, name: user.name, email: user.email },
    secret: SECRET,
  });
  jar.set("next-auth.session-token", token);
  expect(await client.getSession()).toMatchObject({ user: { id: user.id, email: user.email } });
  expect((await fetchWithJar(`${app.baseUrl}/api/workspaces`)).status).toBe(200);
  const otherSecret = await jwt.encode({ token: { sub: user.id }, secret: "another secret" });
  jar.set("next-auth.session-token", otherSecret);
  expect(await client.getSession()).toBeNull();
});

test("the session's update() (useSession inside SessionProvider) posts with the csrf token and gets the session", async () => {
  await client.signIn("credentials", {
    email: user.email,
    password: user.password,
    redirect: false,
    callbackUrl: "/",
  });
  const initial = await client.getSession();
  const React = require("react") as typeof import("react");
  const { renderToString } = require("react-dom/server") as typeof import("react-dom/server");
  let session: ReturnType<NextAuthReact["useSession"]> | undefined;
  function Probe() {
    session = client.useSession();
    return null;
  }
  renderToString(
    React.createElement(client.SessionProvider, { session: initial, children: React.createElement(Probe) }),
  );
  expect(session!.status).toBe("authenticated");
  const consoleError = jest.spyOn(console, "error").mockImplementation(() => undefined); // setState outside a live render
  try {
    const updated = await session!.update({ name: "ignored by the default jwt callback" });
    expect(updated).toMatchObject({ user: { id: user.id, name: user.name, email: user.email } });
  } finally {
    consoleError.mockRestore();
  }
  // what update() posts, without a csrf token: NextAuth's 400 {}
  const bare = await fetchWithJar(`${app.baseUrl}/api/auth/session`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ data: {} }),
  });
  expect(bare.status).toBe(400);
  expect(await bare.json()).toEqual({});
});

test("signOut with redirect: false ends the session", async () => {
  await client.signIn("credentials", {
    email: user.email,
    password: user.password,
    redirect: false,
    callbackUrl: "/",
  });
  const stolen = jar.get("next-auth.session-token")!;
  const out = await client.signOut({ redirect: false, callbackUrl: "/bye" });
  expect(out).toEqual({ url: expect.stringMatching(/\/bye$/) });
  expect(jar.has("next-auth.session-token")).toBe(false);
  expect(await client.getSession()).toBeNull();
  jar.set("next-auth.session-token", stolen);
  expect(await client.getSession()).toBeNull();
  expect((await fetchWithJar(`${app.baseUrl}/api/workspaces`)).status).toBe(401);
});

test("GET signout serves the sign-out page; GET signin/credentials redirects to the sign-in page", async () => {
  const page = await realFetch(`${app.baseUrl}/api/auth/signout`);
  expect(page.status).toBe(200);
  expect(page.headers.get("content-type")).toMatch(/^text\/html/);
  const html = await page.text();
  expect(html).toContain('action="/api/auth/signout"');
  expect(html).toContain('name="csrfToken"');
  const signin = await realFetch(`${app.baseUrl}/api/auth/signin/credentials?callbackUrl=%2Fhome`, {
    redirect: "manual",
  });
  expect(signin.status).toBe(302);
  expect(signin.headers.get("location")).toBe("/auth/signin?callbackUrl=%2Fhome");
});
