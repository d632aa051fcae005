import { randomHex } from "../../../lib/crypto";
import { startApp, type TestApp } from "../../helpers/app";
import { uniqueEmail } from "../../helpers/http";

/** Only the services this suite exercises (other areas are tested on their own). */
const SERVICES = ["api", "auth", "workspaces"];

/**
 * TRUST_PROXY=false: X-Forwarded-For and X-Real-IP are ignored, the socket
 * address counts. Kept in memory (REDIS_URL unset) since every request here
 * comes from 127.0.0.1, which would otherwise carry over between runs.
 */
let app: TestApp;
beforeAll(async () => {
  app = await startApp({ services: SERVICES, env: { TRUST_PROXY: "false", REDIS_URL: undefined } });
});
afterAll(() => app.stop());

test("the limit counts the socket address whatever X-Forwarded-For says", async () => {
  const register = () =>
    app.http().post(
      "/api/auth/register",
      { name: "No Proxy", email: uniqueEmail("noproxy"), password: "correct horse battery" },
      {
        headers: {
          "x-forwarded-for": `203.0.113.${Math.floor(Math.random() * 250)}, 10.0.0.1`,
          "x-real-ip": `2001:db8::${randomHex(2)}`,
        },
      },
    );
  for (let i = 0; i < 10; i++) expect((await register()).status).toBe(201);
  const res = await register();
  expect(res.status).toBe(429);
  expect(res.body).toEqual({ error: expect.any(String), code: "RATE_LIMITED" });
  expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
});
