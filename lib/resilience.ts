import type { RetryPolicyOptions } from "moleculer";

/**
 * What a call does when the node serving it fails, per action (Moleculer's
 * retries are off broker-wide, moleculer.config.ts). Only reads that change
 * nothing are retried: a call that met a node killed without a goodbye (the
 * request timed out, or was rejected when its peers saw the node go) goes to
 * another replica. A write is never retried by the broker: after a timeout it
 * may have happened, and the queues' leases and idempotency keys already take
 * over what a dead node left. A fresh object for each action: Moleculer drops
 * an object met twice when it describes a node's services to the others.
 */
export function readRetry(): RetryPolicyOptions {
  return { enabled: true, retries: 2, delay: 100, maxDelay: 1000, factor: 2 };
}
