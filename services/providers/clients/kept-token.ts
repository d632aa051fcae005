import { createHash } from "node:crypto";
import { LRUCache } from "lru-cache";

/**
 * Credentials a push gateway wants on every request but issues (or lets us
 * issue) rarely: FCM's OAuth access token, APNs' provider token. Each is
 * kept per provider and config version and reused until its `renewAt`; one
 * is made at a time per provider, and sends arriving meanwhile wait for it
 * (never one token per send: APNs refuses tokens renewed too often, FCM's
 * token endpoint is rate limited).
 */

export interface Token {
  value: string;
  /** Epoch ms from which a new one is made before use. */
  renewAt: number;
}

export class KeptTokens {
  /** Per slot: the token being made (shared), and once made, the token. */
  private readonly slots: LRUCache<string, { pending: Promise<Token>; token: Token | null }>;

  constructor(max = 1_000) {
    this.slots = new LRUCache({ max });
  }

  /**
   * The slot's token: the kept one while before its `renewAt`, else a new
   * one from `make`. `stale` is a token the API refused: unless another
   * send replaced it already, it is replaced now. A failed `make` is not
   * kept, so the next send tries again.
   */
  get(slot: string, make: () => Promise<Token>, stale?: string): Promise<Token> {
    const kept = this.slots.get(slot);
    if (kept && (!kept.token || (kept.token.value !== stale && kept.token.renewAt > Date.now())))
      return kept.pending;
    const next = { pending: make(), token: null as Token | null };
    this.slots.set(slot, next);
    next.pending.then(
      (token) => {
        next.token = token;
      },
      () => {
        if (this.slots.get(slot) === next) this.slots.delete(slot);
      },
    );
    return next.pending;
  }
}

/** A provider's slot: its id and a digest of the config the token is made from (a changed key gets its own). */
export function tokenSlot(providerId: string, ...config: unknown[]): string {
  return `${providerId}\n${createHash("sha256").update(JSON.stringify(config)).digest("base64url")}`;
}
