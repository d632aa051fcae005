import { Type, type Static } from "@sinclair/typebox";
import { Paginated, PageQuery } from "../../lib/pagination";
import {
  Component,
  DateTime,
  Int32,
  Nullable,
  Params,
  StringEnum,
  Trimmed,
  WorkspaceIdParam,
} from "../../lib/schema";

const Id = Type.String({ minLength: 1, maxLength: 64 });
const Events = Type.Optional(
  Type.Array(Type.String({ minLength: 1, maxLength: 200 }), {
    maxItems: 100,
    description: "Event types to send; empty or absent: every event",
  }),
);
const Name = Type.Optional(Nullable(Trimmed({ maxLength: 100 })));
const Direction = StringEnum(["INBOUND", "OUTBOUND"]);

export const EndpointSchema = Component(
  "WebhookEndpoint",
  Type.Object({
    id: Type.String(),
    name: Nullable(Type.String()),
    url: Nullable(Type.String()),
    events: Type.Array(Type.String()),
    direction: Direction,
    active: Type.Boolean(),
    createdAt: DateTime(),
    updatedAt: DateTime(),
    _count: Type.Optional(Type.Object({ deliveries: Type.Integer() })),
    secret: Type.Optional(Type.String({ description: "`whsec_...`: in the create answer only" })),
  }),
);

export const DeliverySchema = Component(
  "WebhookDelivery",
  Type.Object({
    id: Type.String(),
    endpointId: Type.String(),
    event: Type.String(),
    direction: Direction,
    attempt: Type.Integer(),
    success: Type.Boolean(),
    statusCode: Nullable(Type.Integer()),
    responseBody: Nullable(Type.String({ description: "The first 2 KB of the answer" })),
    error: Nullable(Type.String()),
    durationMs: Nullable(Type.Integer()),
    nextAttemptAt: Nullable(DateTime()),
    payload: Type.Record(Type.String(), Type.Unknown()),
    createdAt: DateTime(),
    deliveredAt: Nullable(DateTime()),
  }),
);

export const SuccessSchema = Type.Object({ success: Type.Literal(true) });

export const results = {
  list: Type.Array(EndpointSchema),
  deliveries: Paginated(DeliverySchema),
  inbound: Type.Object({ received: Type.Literal(true), deliveryId: Type.String() }),
  dispatchDue: Type.Object({ sent: Int32() }),
};

export const schemas = {
  list: Params({ workspaceId: WorkspaceIdParam }),
  create: Params({
    workspaceId: WorkspaceIdParam,
    name: Name,
    url: Type.Optional(Nullable(Trimmed({ maxLength: 2048, description: "Required for OUTBOUND" }))),
    events: Events,
    direction: Type.Optional(Direction),
  }),
  update: Params({
    workspaceId: WorkspaceIdParam,
    webhookId: Id,
    name: Name,
    url: Type.Optional(Trimmed({ maxLength: 2048 })),
    events: Events,
    active: Type.Optional(Type.Boolean()),
  }),
  remove: Params({ workspaceId: WorkspaceIdParam, webhookId: Id }),
  deliveries: Params({
    workspaceId: WorkspaceIdParam,
    ...PageQuery,
    endpointId: Type.Optional(Type.String({ maxLength: 64 })),
    success: Type.Optional(Type.Boolean()),
    event: Type.Optional(Type.String({ maxLength: 200 })),
  }),
  retry: Params({ workspaceId: WorkspaceIdParam, deliveryId: Id }),
  /** Every field optional here: the signature is checked before `type` is required (400 after 401). */
  inbound: Params({
    endpointId: Id,
    type: Type.Optional(Trimmed({ maxLength: 200 })),
    email: Type.Optional(
      Nullable(Type.String({ format: "email", maxLength: 254, transform: ["trim", "toLowerCase"] })),
    ),
    contactId: Type.Optional(Nullable(Type.String({ maxLength: 64 }))),
    firstName: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
    lastName: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
    phone: Type.Optional(Nullable(Type.String({ maxLength: 50 }))),
    metadata: Type.Optional(Nullable(Type.Record(Type.String(), Type.Unknown()))),
  }),
};

export type InboundParams = Static<typeof schemas.inbound>;

export type Endpoint = Static<typeof EndpointSchema>;
/** The contract's delivery record. */
export type Delivery = Static<typeof DeliverySchema>;
