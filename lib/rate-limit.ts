import {
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
  type RateLimiterAbstract,
} from "rate-limiter-flexible";
import { config } from "./config";
import { rateLimited } from "./errors";
import { redis } from "./redis";

/**
 * Named limits (rate-limiter-flexible): in Redis when REDIS_URL is set, so
 * every replica counts together; in memory otherwise. Redis keys are
 * `<NAMESPACE>:rl:<name>:<subject>` (`rl:<name>:<subject>` with no
 * namespace), so deployments, test runs and benches sharing one Redis keep
 * their own counts.
 */
export interface LimitSpec {
  name: string;
  points: number;
  durationSeconds: number;
}

const limiters = new Map<string, RateLimiterAbstract>();

/** The Redis key prefix of a named limit's counters (rate-limiter-flexible appends `:<subject>`). */
export function limitKeyPrefix(name: string, namespace: string): string {
  return namespace ? `${namespace}:rl:${name}` : `rl:${name}`;
}

function limiter(spec: LimitSpec): RateLimiterAbstract {
  const keyPrefix = limitKeyPrefix(spec.name, config().namespace);
  const key = `${keyPrefix}:${spec.points}:${spec.durationSeconds}`;
  let found = limiters.get(key);
  if (!found) {
    const client = redis();
    const options = { keyPrefix, points: spec.points, duration: spec.durationSeconds };
    found = client
      ? new RateLimiterRedis({ ...options, storeClient: client })
      : new RateLimiterMemory(options);
    limiters.set(key, found);
  }
  return found;
}

/** Count one hit against `subject`; a 429 RATE_LIMITED with Retry-After when the limit is spent. */
export async function consume(spec: LimitSpec, subject: string): Promise<void> {
  try {
    await limiter(spec).consume(subject, 1);
  } catch (err) {
    if (err instanceof RateLimiterRes) throw rateLimited(Math.max(1, Math.ceil(err.msBeforeNext / 1000)));
    throw err;
  }
}

/** Take one hit when the limit allows: 0, else how many milliseconds until it would (nothing counted). Throttles work, not requests. */
export async function takeTurn(spec: LimitSpec, subject: string): Promise<number> {
  try {
    await limiter(spec).consume(subject, 1);
    return 0;
  } catch (err) {
    if (err instanceof RateLimiterRes) return Math.max(1, err.msBeforeNext);
    throw err;
  }
}

/** A 429 when `subject` has used the whole limit, without counting a hit. */
export async function refuseWhenSpent(spec: LimitSpec, subject: string): Promise<void> {
  const state = await limiter(spec).get(subject);
  if (state && state.consumedPoints >= spec.points) {
    throw rateLimited(Math.max(1, Math.ceil(state.msBeforeNext / 1000)));
  }
}

/** Count a hit after the fact (a failure), never refusing it. */
export async function record(spec: LimitSpec, subject: string): Promise<void> {
  await limiter(spec).penalty(subject, 1);
}

/** Forget a subject's hits (a successful sign-in clears its failures). */
export async function reset(spec: LimitSpec, subject: string): Promise<void> {
  await limiter(spec).delete(subject);
}

/** Drop every limiter (tests switch backends between suites). */
export function resetLimiters(): void {
  limiters.clear();
}
