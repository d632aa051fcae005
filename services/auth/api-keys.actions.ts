import { requires } from "../../lib/access";
import { Type } from "@sinclair/typebox";
import { actingUserId, audit } from "../../lib/audit";
import { defineAction, defineMixin } from "../../lib/define-service";
import { notFound, validationError } from "../../lib/errors";
import { WORKSPACE_DELETED_EVENT, workspaceOf } from "../../lib/tenancy";
import * as repo from "./auth.repo";
import { ApiKeySchema, schemas, SuccessSchema } from "./auth.schemas";
import { readRetry } from "../../lib/resilience";

const manage = requires("api_keys.manage", { auth: "session", role: "ADMIN" });

/** Tells every node to forget its cached key lookups (a key was revoked). */
const API_KEY_CACHE_EVENT = "auth.apiKeys.changed";

/** The auth service's workspace API key actions (mixed into `auth`, so they are `auth.listKeys` and so on). */
export const apiKeyActions = defineMixin({
  actions: {
    /** API keys of the workspace, masked. Session + ADMIN. */
    listKeys: defineAction({
      rest: "GET /workspaces/:workspaceId/keys",
      ...manage,
      params: schemas.listKeys,
      result: Type.Array(ApiKeySchema),
      openapi: { tags: ["API keys"], summary: "List the workspace's API keys (masked)" },
      handler: (ctx) => repo.listKeys(workspaceOf(ctx)),
    }),

    /** Create a key; its full value is in this response only. Session + ADMIN. */
    createKey: defineAction({
      rest: "POST /workspaces/:workspaceId/keys",
      ...manage,
      params: schemas.createKey,
      status: 201,
      result: ApiKeySchema,
      openapi: { tags: ["API keys"], summary: "Create an API key (its value is shown once)" },
      async handler(ctx) {
        const expiresAt = ctx.params.expiresAt ? new Date(ctx.params.expiresAt) : null;
        if (expiresAt && expiresAt.getTime() <= Date.now()) {
          throw validationError("expiresAt must be in the future", [
            { field: "expiresAt", message: "must be in the future" },
          ]);
        }
        const key = await repo.createKey(workspaceOf(ctx), {
          name: ctx.params.name,
          scopes: [...new Set<string>(ctx.params.scopes ?? [])],
          expiresAt,
          createdBy: actingUserId(ctx),
        });
        await audit(
          ctx,
          "api_key.created",
          { type: "api_key", id: key.id },
          { name: key.name, scopes: key.scopes },
        );
        return key;
      },
    }),

    /** Revoke a key; it stops working at once. Session + ADMIN. */
    revokeKey: defineAction({
      rest: "DELETE /workspaces/:workspaceId/keys/:keyId",
      ...manage,
      params: schemas.revokeKey,
      result: SuccessSchema,
      openapi: { tags: ["API keys"], summary: "Revoke an API key" },
      async handler(ctx) {
        if (!(await repo.revokeKey(workspaceOf(ctx), ctx.params.keyId))) throw notFound("API key");
        await this.broker.cacher?.clean("auth.verifyApiKey:**");
        this.broker.broadcast(API_KEY_CACHE_EVENT);
        await audit(ctx, "api_key.revoked", { type: "api_key", id: ctx.params.keyId });
        return { success: true as const };
      },
    }),

    /** Internal: the key behind a SHA-256 hash, or null. Cached; cleared on revoke. */
    verifyApiKey: defineAction({
      params: schemas.verifyApiKey,
      cache: { keys: ["keyHash"], ttl: 60 },
      retryPolicy: readRetry(),
      handler: (ctx) => repo.verifyKeyHash(ctx.params.keyHash),
    }),

    /** Internal: record that a key was used. */
    touchApiKey: defineAction({
      params: schemas.touchApiKey,
      handler: (ctx) => repo.touchKey(ctx.params.id),
    }),
  },

  events: {
    [API_KEY_CACHE_EVENT]() {
      return this.broker.cacher?.clean("auth.verifyApiKey:**");
    },
    /** The workspace's keys went with it. */
    [WORKSPACE_DELETED_EVENT]() {
      return this.broker.cacher?.clean("auth.verifyApiKey:**");
    },
  },
});
