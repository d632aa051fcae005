import type { Context, Middleware } from "moleculer";
import type { AppMeta } from "../../../lib/moleculer-types";
import { startApp, type TestApp } from "../../helpers/app";
import { uniqueEmail } from "../../helpers/http";

/**
 * Cookies only where auth needs them: the gateway hands the request's
 * cookies to the actions that declare `cookies: true` (auth's csrf, sign-in,
 * session, sign-out) and to no other call, so a session cookie never rides
 * `ctx.meta` into the internal calls a signed-in request makes.
 */
const ORIGIN = "http://localhost:3998";

describe("cookies on ctx.meta", () => {
  let app: TestApp;
  const calls: Array<{ action: string; cookies: string[] | null }> = [];
  const recorder = {
    name: "CookieRecorder",
    localAction(next: (ctx: Context) => Promise<unknown>, action: { name: string }) {
      return (ctx: Context<unknown, AppMeta>) => {
        calls.push({ action: action.name, cookies: ctx.meta.cookies ? Object.keys(ctx.meta.cookies) : null });
        return next(ctx);
      };
    },
  } as unknown as Middleware;

  beforeAll(async () => {
    app = await startApp({
      services: ["api", "auth", "workspaces"],
      env: { AUTH_SECRET: "cookie-scope-secret", PUBLIC_URL: ORIGIN },
      middlewares: [recorder],
    });
  });
  afterAll(() => app?.stop());

  test("only the auth actions that read cookies get them; a signed-in request's internal calls carry none", async () => {
    const email = uniqueEmail("cookies");
    const password = "correct horse battery";
    const client = app.http();
    expect((await client.post("/api/auth/register", { name: "Cy Cookie", email, password })).status).toBe(
      201,
    );
    const csrf = await client.get("/api/auth/csrf");
    const signedIn = await client.request("POST", "/api/auth/callback/credentials", {
      form: { csrfToken: csrf.body.csrfToken, email, password, json: "true" },
    });
    expect(signedIn.status).toBe(200);
    expect(client.cookies.get("next-auth.session-token")).toBeTruthy();

    calls.length = 0;
    const session = await client.get("/api/auth/session");
    expect(session.status).toBe(200);
    expect(session.body.user.email).toBe(email);
    const created = await client.post("/api/workspaces", { name: "Cookie Jar" });
    expect(created.status).toBe(201);
    const listed = await client.get("/api/workspaces");
    expect(listed.status).toBe(200);

    // The session action read the session cookie from ctx.meta.
    expect(calls.find((c) => c.action === "auth.session")?.cookies).toEqual(
      expect.arrayContaining(["next-auth.session-token"]),
    );
    // Every other call (the routes' actions and the calls they and the authentication made) had none.
    const others = calls.filter((c) => c.action !== "auth.session");
    expect(others.map((c) => c.action)).toEqual(
      expect.arrayContaining(["workspaces.create", "workspaces.list"]),
    );
    expect(others.filter((c) => c.cookies !== null)).toEqual([]);
  });
});
