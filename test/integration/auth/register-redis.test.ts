import Redis from "ioredis";
import { randomHex } from "../../../lib/crypto";
import { startApp, type TestApp } from "../../helpers/app";
import { uniqueEmail } from "../../helpers/http";

/** Only the services this suite exercises (other areas are tested on their own). */
const SERVICES = ["api", "auth", "workspaces"];

/**
 * With REDIS_URL the registration and sign-in limits live in Redis, so every
 * replica counts together. Keys carry the app's NAMESPACE (unique per run),
 * addresses and emails are fresh, and the keys are removed afterwards, so the
 * suite passes when run twice and counts nothing another run made.
 */
const REDIS_URL = process.env.REDIS_URL;
if (!REDIS_URL) console.log("register-redis.test.ts skipped: REDIS_URL is not set");
const suite = REDIS_URL ? describe : describe.skip;

suite("rate limits in Redis", () => {
  let app: TestApp;
  let redis: Redis;
  const keys: string[] = [];
  const namespace = `register-redis-${randomHex(4)}`;
  const limitKey = (name: string, subject: string) => `${namespace}:rl:${name}:${subject}`;

  beforeAll(async () => {
    app = await startApp({ services: SERVICES, env: { REDIS_URL, NAMESPACE: namespace } });
    redis = new Redis(REDIS_URL!);
  });
  afterAll(async () => {
    if (keys.length) await redis.del(...keys);
    await redis.quit();
    await app.stop();
  });

  const freshIp = () => `2001:db8:${randomHex(2)}:${randomHex(2)}::${randomHex(2)}`;
  const register = (ip: string) =>
    app
      .http()
      .post(
        "/api/auth/register",
        { name: "Redis User", email: uniqueEmail("redis"), password: "correct horse battery" },
        { headers: { "x-forwarded-for": ip } },
      );

  test("the 11th registration of an address is 429; the count is a Redis key with the hour's TTL", async () => {
    const ip = freshIp();
    const key = limitKey("register-ip", ip);
    keys.push(key);
    for (let i = 0; i < 10; i++) expect((await register(ip)).status).toBe(201);
    expect(Number(await redis.get(key))).toBe(10);
    const ttl = await redis.pttl(key);
    expect(ttl).toBeGreaterThan(3500_000);
    expect(ttl).toBeLessThanOrEqual(3600_000);

    const res = await register(ip);
    expect(res.status).toBe(429);
    expect(res.body).toEqual({ error: expect.any(String), code: "RATE_LIMITED" });
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(3500);
    expect((await register(freshIp())).status).toBe(201);
  });

  test("the state is Redis's: removing the key lifts the limit at once", async () => {
    const ip = freshIp();
    const key = limitKey("register-ip", ip);
    keys.push(key);
    for (let i = 0; i < 10; i++) expect((await register(ip)).status).toBe(201);
    expect((await register(ip)).status).toBe(429);
    await redis.del(key);
    expect((await register(ip)).status).toBe(201);
  });

  test("a count another replica wrote is honoured", async () => {
    const ip = freshIp();
    const key = limitKey("register-ip", ip);
    keys.push(key);
    await redis.set(key, "10", "PX", 3_600_000);
    const res = await register(ip);
    expect(res.status).toBe(429);
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(3500);
  });

  test("counts of another namespace (a deployment, test run or bench sharing the Redis) are not this app's", async () => {
    const ip = freshIp();
    const others = [`rl:register-ip:${ip}`, `another-${namespace}:rl:register-ip:${ip}`];
    keys.push(...others, limitKey("register-ip", ip));
    for (const key of others) await redis.set(key, "10", "PX", 3_600_000);
    expect((await register(ip)).status).toBe(201);
    expect(Number(await redis.get(limitKey("register-ip", ip)))).toBe(1);
    for (const key of others) expect(await redis.get(key)).toBe("10");
  });

  test("sign-in failures are counted per email in Redis", async () => {
    const email = uniqueEmail("redis-signin");
    const key = limitKey("signin-email-failures", email);
    keys.push(key);
    for (let i = 0; i < 3; i++) {
      const res = await app
        .http()
        .post("/api/auth/callback/credentials", { email, password: "wrong-password" });
      expect(res.status).toBe(401);
    }
    expect(Number(await redis.get(key))).toBe(3);
    await redis.set(key, "20", "PX", 900_000);
    const blocked = await app
      .http()
      .post("/api/auth/callback/credentials", { email, password: "wrong-password" });
    expect(blocked.status).toBe(429);
    expect(blocked.body.code).toBe("RATE_LIMITED");
  });

  test("sign-in attempts are also counted per IP in Redis: a spent IP is 429 before any password check", async () => {
    const ip = freshIp();
    const key = limitKey("signin-ip", ip);
    keys.push(key);
    const attempt = () =>
      app
        .http()
        .post(
          "/api/auth/callback/credentials",
          { email: uniqueEmail("redis-ip"), password: "wrong-password" },
          { headers: { "x-forwarded-for": ip } },
        );
    expect((await attempt()).status).toBe(401);
    expect(Number(await redis.get(key))).toBe(1);
    await redis.set(key, "100", "PX", 900_000);
    const blocked = await attempt();
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get("retry-after"))).toBeGreaterThan(800);
  });
});
