import { Type, type Static } from "@sinclair/typebox";
import { Paginated, PageQuery } from "../../lib/pagination";
import { Component, DateTime, Nullable, Params, StringEnum, Trimmed } from "../../lib/schema";
import { SendTestResultSchema } from "../messages/messages.schemas";

const Id = Type.String({ minLength: 1, maxLength: 64 });
const SubscriptionType = StringEnum(["web", "pushgw1", "pushgw2"], {
  description: "`web`: a browser (VAPID); `pushgw1`, `pushgw2`: a device token of that gateway",
});

/** A contact's push subscription (contract 10); its `keys` are sealed at rest and never answered. */
export const PushSubscriptionSchema = Component(
  "PushSubscription",
  Type.Object({
    id: Type.String(),
    contactId: Nullable(Type.String()),
    type: SubscriptionType,
    endpoint: Nullable(Type.String()),
    token: Nullable(Type.String()),
    active: Type.Boolean(),
    createdAt: DateTime(),
    updatedAt: DateTime(),
  }),
);
export type PushSubscriptionView = Static<typeof PushSubscriptionSchema>;

/** Base64url text of a push key (the browser's `PushSubscription.toJSON()`). */
const PushKey = (bytes: string) =>
  Type.String({
    pattern: "^[A-Za-z0-9_-]+={0,2}$",
    minLength: 16,
    maxLength: 200,
    description: `base64url, ${bytes}`,
  });

export const WebPushKeys = Type.Object(
  { p256dh: PushKey("65 bytes"), auth: PushKey("16 bytes") },
  { additionalProperties: false },
);
export type WebPushKeys = Static<typeof WebPushKeys>;

/** A renewed subscription's proof that it replaces an earlier one of the same browser: that one's endpoint and auth secret. */
export const PreviousWebSubscription = Type.Object(
  { endpoint: Type.String({ maxLength: 2000 }), auth: PushKey("16 bytes") },
  { additionalProperties: false },
);

export const WebPushEndpoint = Type.String({
  maxLength: 2000,
  pattern: "^https://[^\\s]+$",
  errorMessage: "must be the https URL of a push service",
});

export const schemas = {
  list: Params({
    workspaceId: Id,
    ...PageQuery,
    contactId: Type.Optional(Id),
    type: Type.Optional(SubscriptionType),
    active: Type.Optional(Type.Boolean()),
  }),
  create: Params({
    workspaceId: Id,
    contactId: Type.Optional(Nullable(Id)),
    type: SubscriptionType,
    endpoint: Type.Optional(WebPushEndpoint),
    keys: Type.Optional(WebPushKeys),
    token: Type.Optional(
      Trimmed({ minLength: 1, maxLength: 4096, description: "pushgw1, pushgw2: the device token" }),
    ),
  }),
  get: Params({ workspaceId: Id, subscriptionId: Id }),
  update: Params({
    workspaceId: Id,
    subscriptionId: Id,
    active: Type.Optional(Type.Boolean()),
    contactId: Type.Optional(Nullable(Id)),
  }),
  test: Params({
    workspaceId: Id,
    subscriptionId: Type.Optional(Id),
    contactId: Type.Optional(Id),
    title: Trimmed({ minLength: 1, maxLength: 200 }),
    body: Trimmed({ minLength: 1, maxLength: 2000 }),
  }),
  /** Internal (the website script's `POST /api/script/push`): a browser's subscription. */
  saveWeb: Params({
    contactId: Nullable(Id),
    endpoint: WebPushEndpoint,
    keys: WebPushKeys,
    previous: Type.Optional(PreviousWebSubscription),
  }),
  /** Internal (the sender): subscriptions a push service said are gone. */
  deactivate: Params({ subscriptionIds: Type.Array(Id, { minItems: 1, maxItems: 10_000 }) }),
};

export const results = {
  subscription: PushSubscriptionSchema,
  list: Paginated(PushSubscriptionSchema),
  success: Type.Object({ success: Type.Literal(true) }),
  test: SendTestResultSchema,
  saveWeb: Type.Object({ subscription: PushSubscriptionSchema, created: Type.Boolean() }),
  deactivate: Type.Object({ deactivated: Type.Integer() }),
};
