import { startApp, type TestApp } from "../../helpers/app";
import { uniqueEmail } from "../../helpers/http";

/** Only the services this suite exercises (other areas are tested on their own). */
const SERVICES = ["api", "auth", "workspaces"];

/** With an https PUBLIC_URL the cookies take NextAuth's __Secure-/__Host- names and the Secure flag. */
const ORIGIN = "https://app.example.test";
let app: TestApp;
const email = uniqueEmail("secure");
const password = "correct horse battery";

beforeAll(async () => {
  app = await startApp({ services: SERVICES, env: { PUBLIC_URL: ORIGIN } });
  expect((await app.http().post("/api/auth/register", { name: "Sec", email, password })).status).toBe(201);
});
afterAll(() => app.stop());

const cookieNamed = (res: { setCookies: string[] }, name: string) =>
  res.setCookies.find((c) => c.startsWith(`${name}=`));

test("csrf, callback-url and session cookies carry the prefixes and Secure; the session works and clears", async () => {
  const client = app.http();
  const csrf = await client.get("/api/auth/csrf");
  expect(cookieNamed(csrf, "__Host-next-auth.csrf-token")).toMatch(
    /^__Host-next-auth\.csrf-token=[0-9a-f]{64}%7C[0-9a-f]{64}; Path=\/; HttpOnly; Secure; SameSite=Lax$/,
  );
  expect(cookieNamed(csrf, "next-auth.csrf-token")).toBeUndefined();

  const signin = await client.request("POST", "/api/auth/callback/credentials", {
    form: { csrfToken: csrf.body.csrfToken, email, password, callbackUrl: "/home", json: "true" },
  });
  expect(signin.status).toBe(200);
  expect(signin.body).toEqual({ url: `${ORIGIN}/home` });
  expect(cookieNamed(signin, "__Secure-next-auth.session-token")).toMatch(
    /; Path=\/; Expires=[^;]+; HttpOnly; Secure; SameSite=Lax$/,
  );
  expect(cookieNamed(signin, "__Secure-next-auth.callback-url")).toMatch(
    /; Path=\/; HttpOnly; Secure; SameSite=Lax$/,
  );
  expect(cookieNamed(signin, "next-auth.session-token")).toBeUndefined();

  expect((await client.get("/api/auth/session")).body.user.email).toBe(email);
  expect((await client.get("/api/workspaces")).status).toBe(200);

  const signout = await client.request("POST", "/api/auth/signout", {
    form: { csrfToken: csrf.body.csrfToken, json: "true" },
  });
  expect(signout.body).toEqual({ url: ORIGIN });
  expect(cookieNamed(signout, "__Secure-next-auth.session-token")).toBe(
    "__Secure-next-auth.session-token=; Max-Age=0; Path=/; HttpOnly; Secure; SameSite=Lax",
  );
  expect((await client.get("/api/workspaces")).status).toBe(401);
});

test("a csrf cookie under the http name is not accepted on https", async () => {
  const client = app.http();
  const csrf = await client.get("/api/auth/csrf");
  const value = client.cookies.get("__Host-next-auth.csrf-token")!;
  client.cookies.delete("__Host-next-auth.csrf-token");
  client.cookies.set("next-auth.csrf-token", value);
  const res = await client.request("POST", "/api/auth/callback/credentials", {
    form: { csrfToken: csrf.body.csrfToken, email, password, json: "true" },
  });
  expect(res.body).toEqual({ url: `${ORIGIN}/api/auth/signin?csrf=true` });
});

test("providers and error URLs are built from the https origin", async () => {
  const res = await app.http().get("/api/auth/providers");
  expect(res.body.credentials.callbackUrl).toBe(`${ORIGIN}/api/auth/callback/credentials`);
  const bad = await app
    .http()
    .post("/api/auth/callback/credentials", { email, password: "wrong-password", json: "true" });
  expect(bad.body).toEqual({ url: `${ORIGIN}/api/auth/error?error=CredentialsSignin&provider=credentials` });
});

test("a session cookie under the plain name is not accepted on https (only __Secure- counts)", async () => {
  const client = app.http();
  const csrf = await client.get("/api/auth/csrf");
  await client.request("POST", "/api/auth/callback/credentials", {
    form: { csrfToken: csrf.body.csrfToken, email, password, json: "true" },
  });
  const token = client.cookies.get("__Secure-next-auth.session-token")!;
  const planted = app.http();
  planted.cookies.set("next-auth.session-token", token);
  expect((await planted.get("/api/workspaces")).status).toBe(401);
  expect((await planted.get("/api/auth/session")).body).toEqual({});
  const right = app.http();
  right.cookies.set("__Secure-next-auth.session-token", token);
  expect((await right.get("/api/workspaces")).status).toBe(200);
});
