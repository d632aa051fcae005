import Redis from "ioredis";
import { randomHex, sha256Hex } from "../../../lib/crypto";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace, signUp } from "../../helpers/http";

/**
 * Key verification cached in Redis: two nodes (no transporter between them)
 * share only the database and the Redis cacher. A key used through node A is
 * cached in Redis; revoking it through node B clears the shared entry, so A
 * refuses it at once. With per-node memory caches A would still accept it.
 */
const REDIS_URL = process.env.REDIS_URL;
if (!REDIS_URL) console.log("keys-redis.test.ts skipped: REDIS_URL is not set");
const describeRedis = REDIS_URL ? describe : describe.skip;

describeRedis("API key cache in Redis", () => {
  let a: TestApp;
  let b: TestApp;
  let redis: Redis;
  const env = { REDIS_URL, NAMESPACE: `keys-redis-${randomHex(4)}` };

  beforeAll(async () => {
    a = await startApp({ env });
    b = await startApp({ env, databaseUrl: a.databaseUrl });
    redis = new Redis(REDIS_URL!);
  });
  afterAll(async () => {
    redis?.disconnect();
    await b?.stop();
    await a?.stop();
  });

  test("both nodes use the Redis cacher", () => {
    expect(a.broker.cacher?.constructor.name).toBe("RedisCacher");
    expect(b.broker.cacher?.constructor.name).toBe("RedisCacher");
  });

  test("a revoke through one node takes effect at once on another", async () => {
    const { owner, ws } = await ownerWithWorkspace(a.baseUrl);
    const created = await owner.client.post(`${ws}/keys`, { name: "shared" });
    expect(created.status).toBe(201);
    const hash = sha256Hex(created.body.key);

    expect((await a.http().get(ws, { bearer: created.body.key })).status).toBe(200);
    // The verification now lives in Redis, where every node reads it.
    const cached = await redis.keys(`*auth.verifyApiKey*${hash}*`);
    expect(cached.length).toBeGreaterThan(0);
    expect((await b.http().get(ws, { bearer: created.body.key })).status).toBe(200);

    // Revoke through B (B's session: the cookie is valid on any node).
    const bOwner = b.http();
    for (const [k, v] of owner.client.cookies) bOwner.cookies.set(k, v);
    expect((await bOwner.delete(`${ws}/keys/${created.body.id}`)).status).toBe(200);

    expect(await redis.keys(`*auth.verifyApiKey*${hash}*`)).toEqual([]);
    const refused = await a.http().get(ws, { bearer: created.body.key });
    expect(refused.status).toBe(401);
    expect(refused.body.code).toBe("UNAUTHORIZED");
  });

  test("a membership removal through one node takes effect at once on another", async () => {
    const { owner, ws } = await ownerWithWorkspace(a.baseUrl);
    const user = await signUp(a.baseUrl);
    const added = await owner.client.post(`${ws}/members`, { email: user.email, role: "ADMIN" });
    expect((await user.client.get(ws)).status).toBe(200);
    const bOwner = b.http();
    for (const [k, v] of owner.client.cookies) bOwner.cookies.set(k, v);
    expect((await bOwner.delete(`${ws}/members/${added.body.id}`)).status).toBe(200);
    expect((await user.client.get(ws)).status).toBe(403);
  });
});
