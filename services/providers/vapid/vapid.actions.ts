import { requires } from "../../../lib/access";
import { Type } from "@sinclair/typebox";
import webPush from "web-push";
import { defineAction, defineMixin } from "../../../lib/define-service";
import { fieldError } from "../../../lib/errors";
import { Nullable, Params, WorkspaceIdParam } from "../../../lib/schema";
import { workspaceOf } from "../../../lib/tenancy";
import * as repo from "../providers.repo";
import { results } from "../providers.schemas";
import { saveSingleProvider, type SingleProviderSpec } from "../single.actions";
import { vapidConfig } from "./config";

/** The workspace's one web push provider, at `{ws}/providers/push`. */
export const VAPID_PROVIDER: SingleProviderSpec = {
  type: "vapid",
  channel: "push",
  path: "push",
  name: "Push",
  label: "Web push (VAPID)",
};

const generateParams = Params({
  workspaceId: WorkspaceIdParam,
  subject: Type.Optional(vapidConfig.properties.subject),
});

/**
 * The web push provider's own actions beside its routes (single.actions.ts):
 * `POST {ws}/providers/push/generate {subject?}`, a new VAPID pair stored
 * through the provider's own save (201 created, 200 replaced; the subject is
 * the body's, else the stored one's; browsers subscribed with the old key
 * must subscribe again), and the public key the website script subscribes
 * browsers with.
 */
export const vapidActions = defineMixin({
  actions: {
    generatePush: defineAction({
      rest: "POST /workspaces/:workspaceId/providers/push/generate",
      openapi: {
        tags: ["Providers"],
        summary: "Web push (VAPID): generate and store a new key pair (201 created, 200 replaced)",
      },
      ...requires("providers.manage"),
      params: generateParams,
      result: results.provider,
      alsoAnswers: { 201: results.provider },
      async handler(ctx) {
        const stored = await repo.providerOfType(workspaceOf(ctx), VAPID_PROVIDER.type);
        const storedSubject = stored?.config.subject;
        const subject = ctx.params.subject ?? (typeof storedSubject === "string" ? storedSubject : null);
        if (!subject) throw fieldError("subject", "is required: a mailto: address or an https: URL");
        const { publicKey, privateKey } = webPush.generateVAPIDKeys();
        return saveSingleProvider(VAPID_PROVIDER, ctx, { publicKey, privateKey, subject }, false);
      },
    }),

    /** Internal (the website script's config): the workspace's VAPID public key, null without a web push provider. */
    vapidPublicKey: defineAction({
      result: Type.Object({ publicKey: Nullable(Type.String()) }),
      async handler(ctx) {
        const publicKey = (await repo.providerOfType(workspaceOf(ctx), VAPID_PROVIDER.type))?.config
          .publicKey;
        return { publicKey: typeof publicKey === "string" ? publicKey : null };
      },
    }),
  },
});
