import { requires } from "../../lib/access";
import { defineAction, defineService } from "../../lib/define-service";
import { fieldError, found, isNotFound, notFound } from "../../lib/errors";
import type { AppContext } from "../../lib/moleculer-types";
import { pageRequest } from "../../lib/pagination";
import { systemCall } from "../../lib/system-call";
import { workspaceOf } from "../../lib/tenancy";
import { DatabaseMixin } from "../../mixins/database.mixin";
import type { SendTestResult } from "../messages/messages.schemas";
import { results, schemas } from "./push.schemas";
import { saveWebSubscription } from "./renewal";
import * as repo from "./subscriptions.repo";

const WS = "/workspaces/:workspaceId/push";
const tags = ["Push subscriptions"];
const read = requires("contacts.read");
const write = requires("contacts.write");

/** A contact named by the caller must be the workspace's (404 naming `contactId`). */
async function checkContact(ctx: AppContext, contactId: string | null | undefined): Promise<void> {
  if (!contactId) return;
  try {
    await systemCall(ctx, workspaceOf(ctx), "contacts.get", { workspaceId: workspaceOf(ctx), contactId });
  } catch (err) {
    if (isNotFound(err))
      throw notFound("Contact", { field: "contactId", message: `no contact ${contactId}` });
    throw err;
  }
}

/**
 * Contacts' push subscriptions (contract 10; contacts.* scopes): browsers'
 * web push subscriptions (from the website script's `POST /api/script/push`
 * or this API) and the push gateways' device tokens. Keys are sealed at rest
 * and never answered; the sending process reads them through `for-send.ts`.
 */
export default defineService({
  name: "push",
  mixins: [DatabaseMixin],
  settings: { rest: "/" },

  actions: {
    /** Subscriptions, newest first; filters `contactId`, `type`, `active`. contacts.read. */
    list: defineAction({
      rest: `GET ${WS}`,
      openapi: { tags, summary: "List push subscriptions" },
      ...read,
      params: schemas.list,
      result: results.list,
      handler: (ctx) => {
        const { contactId, type, active } = ctx.params;
        return repo.listSubscriptions(workspaceOf(ctx), pageRequest(ctx.params), { contactId, type, active });
      },
    }),

    /**
     * Add a subscription: `web` with the browser's `endpoint` and `keys`,
     * `pushgw1`/`pushgw2` with the device `token`. A known endpoint or token
     * is updated (200, active again), else created (201). contacts.write.
     */
    create: defineAction({
      rest: `POST ${WS}`,
      openapi: { tags, summary: "Add a push subscription (201; a known endpoint or token updates: 200)" },
      ...write,
      params: schemas.create,
      status: 201,
      alsoAnswers: { 200: results.subscription },
      result: results.subscription,
      async handler(ctx) {
        const { type, endpoint, keys, token, contactId } = ctx.params;
        if (type === "web") {
          if (!endpoint) throw fieldError("endpoint", "is required for a web subscription");
          if (!keys) throw fieldError("keys", "are required for a web subscription");
          if (token) throw fieldError("token", "is for pushgw1 and pushgw2 subscriptions");
        } else {
          if (!token) throw fieldError("token", `is required for a ${type} subscription`);
          if (endpoint || keys) throw fieldError(endpoint ? "endpoint" : "keys", "is for web subscriptions");
        }
        await checkContact(ctx, contactId);
        const { subscription, created } = await repo.saveSubscription(workspaceOf(ctx), {
          contactId: contactId ?? null,
          type,
          endpoint: endpoint ?? null,
          token: token ?? null,
          keys: keys ?? null,
        });
        if (!created) ctx.meta.$statusCode = 200;
        return subscription;
      },
    }),

    /** One subscription. contacts.read. */
    get: defineAction({
      rest: `GET ${WS}/:subscriptionId`,
      openapi: { tags, summary: "Get a push subscription" },
      ...read,
      params: schemas.get,
      result: results.subscription,
      handler: async (ctx) =>
        found(await repo.findSubscription(workspaceOf(ctx), ctx.params.subscriptionId), "Push subscription"),
    }),

    /** Turn a subscription off or on, or bind it to another contact (null unbinds). contacts.write. */
    update: defineAction({
      rest: `PATCH ${WS}/:subscriptionId`,
      openapi: { tags, summary: "Update a push subscription (active, contactId)" },
      ...write,
      params: schemas.update,
      result: results.subscription,
      async handler(ctx) {
        const { subscriptionId, active, contactId } = ctx.params;
        await checkContact(ctx, contactId);
        return found(
          await repo.updateSubscription(workspaceOf(ctx), subscriptionId, { active, contactId }),
          "Push subscription",
        );
      },
    }),

    remove: defineAction({
      rest: `DELETE ${WS}/:subscriptionId`,
      openapi: { tags, summary: "Remove a push subscription" },
      ...write,
      params: schemas.get,
      result: results.success,
      async handler(ctx) {
        if (!(await repo.deleteSubscription(workspaceOf(ctx), ctx.params.subscriptionId)))
          throw notFound("Push subscription");
        return { success: true as const };
      },
    }),

    /**
     * Push a test notification now to one subscription, or to every active
     * one of a contact: unchecked and unrecorded, each subscription's result
     * as send-test answers (a gone one is deactivated). providers.manage.
     */
    test: defineAction({
      rest: `POST ${WS}/test`,
      openapi: { tags, summary: "Send a test push to a subscription or a contact's subscriptions" },
      ...requires("providers.manage"),
      params: schemas.test,
      result: results.test,
      async handler(ctx) {
        const ws = workspaceOf(ctx);
        const { subscriptionId, contactId, title, body } = ctx.params;
        if (subscriptionId && contactId)
          throw fieldError("contactId", "must not be given with subscriptionId");
        let ids: string[];
        if (subscriptionId) {
          found(await repo.findSubscription(ws, subscriptionId), "Push subscription");
          ids = [subscriptionId];
        } else if (contactId) {
          await checkContact(ctx, contactId);
          ids = (await repo.activeSubscriptions(ws, [contactId])).map((s) => s.id);
          if (!ids.length) throw fieldError("contactId", "has no active push subscription");
        } else throw fieldError("subscriptionId", "or `contactId` is required");
        return systemCall<SendTestResult>(ctx, ws, "messages.pushTest", {
          subscriptionIds: ids,
          content: { title, body },
        });
      },
    }),

    /**
     * Internal (the website script's `POST /api/script/push`): store a browser's
     * subscription, or renew its endpoint's; a renewal proving the one it
     * replaces takes over that one's contact (renewal.ts).
     */
    saveWeb: defineAction({
      params: schemas.saveWeb,
      result: results.saveWeb,
      handler: (ctx) => saveWebSubscription(workspaceOf(ctx), ctx.params),
    }),

    /** Internal (the sender): a push service said these subscriptions are gone. */
    deactivate: defineAction({
      params: schemas.deactivate,
      result: results.deactivate,
      handler: async (ctx) => ({
        deactivated: await repo.deactivate(workspaceOf(ctx), ctx.params.subscriptionIds),
      }),
    }),
  },
});
