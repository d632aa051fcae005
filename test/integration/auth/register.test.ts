import { randomHex } from "../../../lib/crypto";
import { startApp, type TestApp } from "../../helpers/app";
import { uniqueEmail } from "../../helpers/http";

/** Only the services this suite exercises (other areas are tested on their own). */
const SERVICES = ["api", "auth", "workspaces"];

/** POST /api/auth/register: shape, validation, conflicts and the per-IP limit (in memory here; see register-redis). */
let app: TestApp;
beforeAll(async () => {
  app = await startApp({ services: SERVICES, env: { REDIS_URL: undefined, TRUST_PROXY: undefined } });
});
afterAll(() => app.stop());

/** An address of its own for each test, so limits never cross tests or runs. */
const freshIp = () => `2001:db8:${randomHex(2)}:${randomHex(2)}::${randomHex(2)}`;
const register = (body: unknown, headers: Record<string, string> = { "x-forwarded-for": freshIp() }) =>
  app.http().post("/api/auth/register", body, { headers });
const valid = () => ({ name: "Reg User", email: uniqueEmail("reg"), password: "correct horse battery" });

test("201 {id, name, email, createdAt}: email lower-cased and trimmed, name trimmed, nothing else", async () => {
  const email = uniqueEmail("Mixed.Case");
  const res = await register({
    name: "  Ada Lovelace ",
    email: `  ${email.toUpperCase()} `,
    password: "correct horse battery",
  });
  expect(res.status).toBe(201);
  expect(res.body).toEqual({
    id: expect.any(String),
    name: "Ada Lovelace",
    email: email.toLowerCase(),
    createdAt: expect.any(String),
  });
  expect(Number.isNaN(Date.parse(res.body.createdAt))).toBe(false);
});

test("mass assignment: id, createdAt, passwordHash in the body have no effect", async () => {
  const body = {
    ...valid(),
    id: "chosen-id",
    createdAt: "2000-01-01T00:00:00.000Z",
    passwordHash: "scrypt$1$1$1$x$y",
  };
  const res = await register(body);
  expect(res.status).toBe(201);
  expect(res.body.id).not.toBe("chosen-id");
  expect(res.body.createdAt).not.toBe("2000-01-01T00:00:00.000Z");
  expect(
    (await app.http().post("/api/auth/callback/credentials", { email: body.email, password: body.password }))
      .status,
  ).toBe(200);
});

test.each<[string, Record<string, unknown>, string]>([
  ["missing name", { name: undefined }, "name"],
  ["empty name", { name: "" }, "name"],
  ["blank name", { name: "   " }, "name"],
  ["name over 100 characters", { name: "n".repeat(101) }, "name"],
  ["name not a string", { name: 42 }, "name"],
  ["missing email", { email: undefined }, "email"],
  ["malformed email", { email: "not-an-email" }, "email"],
  ["email over 254 characters", { email: `${"e".repeat(250)}@example.test` }, "email"],
  ["email not a string", { email: ["a@b.co"] }, "email"],
  ["missing password", { password: undefined }, "password"],
  ["password under 8 characters", { password: "short7!" }, "password"],
  ["password over 256 characters", { password: "p".repeat(257) }, "password"],
  ["password not a string", { password: 12345678 }, "password"],
])("%s: 400 VALIDATION_ERROR with details naming %s", async (_name, change, field) => {
  const body: Record<string, unknown> = { ...valid(), ...change };
  for (const key of Object.keys(change)) if (change[key] === undefined) delete body[key];
  const res = await register(body);
  expect(res.status).toBe(400);
  expect(res.body).toEqual({
    error: expect.any(String),
    code: "VALIDATION_ERROR",
    details: expect.any(Array),
  });
  expect(res.body.details.map((d: { field: string }) => d.field)).toContain(field);
  for (const detail of res.body.details)
    expect(detail).toEqual({ field: expect.any(String), message: expect.any(String) });
});

test("a body that is not an object, or none at all: 400 with details", async () => {
  const none = await app
    .http()
    .request("POST", "/api/auth/register", { headers: { "x-forwarded-for": freshIp() } });
  expect(none.status).toBe(400);
  expect(none.body.code).toBe("VALIDATION_ERROR");
  const array = await register([1, 2]);
  expect(array.status).toBe(400);
  expect(array.body.code).toBe("VALIDATION_ERROR");
});

test("409 CONFLICT for a taken email, whatever its case and spacing", async () => {
  const body = valid();
  expect((await register(body)).status).toBe(201);
  for (const email of [body.email, body.email.toUpperCase(), ` ${body.email} `]) {
    const res = await register({ ...body, email });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ error: expect.any(String), code: "CONFLICT" });
  }
});

describe("10 registrations per client IP per hour", () => {
  test("the 11th from one X-Forwarded-For address is 429 with Retry-After and the contract body", async () => {
    const ip = freshIp();
    for (let i = 0; i < 10; i++)
      expect((await register(valid(), { "x-forwarded-for": ip })).status).toBe(201);
    const res = await register(valid(), { "x-forwarded-for": ip });
    expect(res.status).toBe(429);
    expect(res.body).toEqual({ error: expect.any(String), code: "RATE_LIMITED" });
    const retryAfter = Number(res.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThan(3500);
    expect(retryAfter).toBeLessThanOrEqual(3600);
    // another address is not affected
    expect((await register(valid())).status).toBe(201);
  });

  test("the first address of X-Forwarded-For counts, not the proxies after it", async () => {
    const ip = freshIp();
    for (let i = 0; i < 10; i++) {
      expect((await register(valid(), { "x-forwarded-for": `${ip}, 10.0.0.${i + 1}` })).status).toBe(201);
    }
    expect((await register(valid(), { "x-forwarded-for": `${ip}, 10.9.9.9` })).status).toBe(429);
    expect((await register(valid(), { "x-forwarded-for": `${freshIp()}, 10.0.0.1` })).status).toBe(201);
  });

  test("without X-Forwarded-For, X-Real-IP counts", async () => {
    const ip = freshIp();
    const headers = { "x-forwarded-for": "", "x-real-ip": ip };
    for (let i = 0; i < 10; i++) expect((await register(valid(), headers)).status).toBe(201);
    expect((await register(valid(), headers)).status).toBe(429);
    expect((await register(valid(), { "x-forwarded-for": "", "x-real-ip": freshIp() })).status).toBe(201);
  });

  test("refused (invalid) registrations do not count; conflicts do", async () => {
    const ip = freshIp();
    for (let i = 0; i < 12; i++)
      expect((await register({ ...valid(), password: "short" }, { "x-forwarded-for": ip })).status).toBe(400);
    const taken = valid();
    expect((await register(taken, { "x-forwarded-for": ip })).status).toBe(201);
    for (let i = 0; i < 9; i++) expect((await register(taken, { "x-forwarded-for": ip })).status).toBe(409);
    expect((await register(valid(), { "x-forwarded-for": ip })).status).toBe(429);
  });
});
