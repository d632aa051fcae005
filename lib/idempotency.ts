import { sha256Hex } from "./crypto";
import { query } from "./database";
import { fieldError, idempotencyConflict } from "./errors";
import type { AppContext } from "./moleculer-types";
import { workspaceOf } from "./tenancy";

/**
 * `Idempotency-Key` on POSTs that clients retry (contract 3): per workspace
 * and operation, for 24 hours. The same body gets the first answer again
 * with `Idempotent-Replayed: true`; another body, or a retry while the first
 * still runs, is 409 IDEMPOTENCY_CONFLICT. A first request that fails keeps
 * nothing, so it may be retried with the same key.
 */

const TTL_HOURS = 24;

/** JSON with sorted keys, so the same body hashes the same whatever its key order. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object")
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(",")}}`;
  return JSON.stringify(value) ?? "null";
}

export async function idempotent<T>(
  ctx: AppContext,
  scope: string,
  status: number,
  run: () => Promise<T>,
): Promise<T> {
  const key = ctx.meta.idempotencyKey;
  if (key === undefined) return run();
  if (key.length < 1 || key.length > 255) throw fieldError("Idempotency-Key", "must be 1 to 255 characters");
  const ws = workspaceOf(ctx);
  const hash = sha256Hex(canonical(ctx.params));
  await query(
    ws,
    `DELETE FROM idempotency_keys WHERE workspace_id = $1 AND scope = $2 AND key = $3 AND created_at < now() - interval '${TTL_HOURS} hours'`,
    [scope, key],
  );
  const taken = await query(
    ws,
    `INSERT INTO idempotency_keys (workspace_id, scope, key, request_hash) VALUES ($1, $2, $3, $4)
     ON CONFLICT DO NOTHING RETURNING key`,
    [scope, key, hash],
  );
  if (!taken.length) {
    const [first] = await query<{ request_hash: string; status: number | null; response: T }>(
      ws,
      `SELECT request_hash, status, response FROM idempotency_keys WHERE workspace_id = $1 AND scope = $2 AND key = $3`,
      [scope, key],
    );
    if (!first) return idempotent(ctx, scope, status, run);
    if (first.request_hash !== hash)
      throw idempotencyConflict("This Idempotency-Key was used with a different request body");
    if (first.status === null)
      throw idempotencyConflict("The first request with this Idempotency-Key is still running");
    ctx.meta.$statusCode = first.status;
    ctx.meta.$responseHeaders = { ...ctx.meta.$responseHeaders, "Idempotent-Replayed": "true" };
    return first.response;
  }
  try {
    const result = await run();
    await query(
      ws,
      `UPDATE idempotency_keys SET status = $4, response = $5::jsonb WHERE workspace_id = $1 AND scope = $2 AND key = $3`,
      [scope, key, ctx.meta.$statusCode ?? status, JSON.stringify(result)],
    );
    return result;
  } catch (err) {
    await query(ws, `DELETE FROM idempotency_keys WHERE workspace_id = $1 AND scope = $2 AND key = $3`, [
      scope,
      key,
    ]);
    throw err;
  }
}
