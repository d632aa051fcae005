import Redis from "ioredis";
import { config } from "./config";

let client: Redis | undefined;

/** The process's Redis client when REDIS_URL is set (rate limits); undefined embedded. */
export function redis(): Redis | undefined {
  const url = config().redisUrl;
  if (!url) return undefined;
  // Auto-pipelining: the commands of one tick (a burst's rate-limit checks) go in one write.
  client ??= new Redis(url, {
    maxRetriesPerRequest: 2,
    enableOfflineQueue: true,
    lazyConnect: false,
    enableAutoPipelining: true,
  });
  return client;
}

export async function closeRedis(): Promise<void> {
  const c = client;
  client = undefined;
  await c?.quit().catch(() => undefined);
}
