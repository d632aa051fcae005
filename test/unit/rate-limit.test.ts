import { loadConfig as load, resetConfig } from "../../lib/config";
import { consume, limitKeyPrefix, resetLimiters } from "../../lib/rate-limit";

const loadConfig = (env: Record<string, string>) => load(env as NodeJS.ProcessEnv);

describe("rate-limit namespaces", () => {
  const saved = { NAMESPACE: process.env.NAMESPACE, REDIS_URL: process.env.REDIS_URL };
  beforeAll(() => delete process.env.REDIS_URL); // counted in memory here; Redis in register-redis.test.ts
  afterAll(() => {
    for (const [key, value] of Object.entries(saved))
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    resetConfig();
    resetLimiters();
  });

  test("NAMESPACE leads a limit's Redis keys; none, the plain `rl:` prefix", () => {
    expect(loadConfig({ NAMESPACE: "staging" }).namespace).toBe("staging");
    expect(loadConfig({}).namespace).toBe("");
    expect(limitKeyPrefix("register-ip", "staging")).toBe("staging:rl:register-ip");
    expect(limitKeyPrefix("register-ip", "")).toBe("rl:register-ip");
  });

  test("a subject's count in one namespace is not another's", async () => {
    const spec = { name: "unit-once", points: 1, durationSeconds: 60 };
    const inNamespace = async (namespace: string) => {
      process.env.NAMESPACE = namespace;
      resetConfig();
      return consume(spec, "203.0.113.7").then(
        () => "allowed",
        (err: { type?: string }) => err.type,
      );
    };
    expect(await inNamespace("a")).toBe("allowed");
    expect(await inNamespace("a")).toBe("RATE_LIMITED");
    expect(await inNamespace("b")).toBe("allowed");
    expect(await inNamespace("a")).toBe("RATE_LIMITED");
  });
});
