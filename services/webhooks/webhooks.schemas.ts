import { pageParams } from "../../lib/pagination";

const wsId = { type: "string", min: 1, max: 64 } as const;
const id = { type: "string", min: 1, max: 64 } as const;
const eventsRule = { type: "array", items: { type: "string", min: 1, max: 200 }, max: 100, optional: true } as const;
const NAME_MAX = 100;

export const schemas = {
  list: { $$strict: "remove", workspaceId: wsId },
  create: {
    $$strict: "remove",
    workspaceId: wsId,
    name: { type: "string", max: NAME_MAX, trim: true, optional: true, nullable: true },
    url: { type: "string", max: 2048, trim: true, optional: true, nullable: true },
    events: eventsRule,
    direction: { type: "enum", values: ["INBOUND", "OUTBOUND"], optional: true },
  },
  update: {
    $$strict: "remove",
    workspaceId: wsId,
    webhookId: id,
    name: { type: "string", max: NAME_MAX, trim: true, optional: true, nullable: true },
    url: { type: "string", max: 2048, trim: true, optional: true },
    events: eventsRule,
    active: { type: "boolean", optional: true },
  },
  remove: { $$strict: "remove", workspaceId: wsId, webhookId: id },
  deliveries: {
    $$strict: "remove",
    workspaceId: wsId,
    ...pageParams,
    endpointId: { type: "string", max: 64, optional: true },
    success: { type: "boolean", convert: true, optional: true },
    event: { type: "string", max: 200, optional: true },
  },
  retry: { $$strict: "remove", workspaceId: wsId, deliveryId: id },
  /** Every field optional here: the signature is checked before `type` is required (400 after 401). */
  inbound: {
    $$strict: "remove",
    endpointId: id,
    type: { type: "string", max: 200, trim: true, optional: true },
    email: { type: "email", normalize: true, max: 254, optional: true, nullable: true },
    contactId: { type: "string", max: 64, optional: true, nullable: true },
    firstName: { type: "string", max: 200, optional: true, nullable: true },
    lastName: { type: "string", max: 200, optional: true, nullable: true },
    phone: { type: "string", max: 50, optional: true, nullable: true },
    metadata: { type: "object", optional: true, nullable: true },
  },
} as const;

export interface Endpoint {
  id: string;
  name: string | null;
  url: string | null;
  events: string[];
  direction: "INBOUND" | "OUTBOUND";
  active: boolean;
  createdAt: string;
  updatedAt: string;
  _count?: { deliveries: number };
  /** Only in the create response. */
  secret?: string;
}

/** The contract's delivery record. */
export interface Delivery {
  id: string;
  endpointId: string;
  event: string;
  direction: "INBOUND" | "OUTBOUND";
  attempt: number;
  success: boolean;
  statusCode: number | null;
  responseBody: string | null;
  error: string | null;
  durationMs: number | null;
  nextAttemptAt: string | null;
  payload: Record<string, unknown>;
  createdAt: string;
  deliveredAt: string | null;
}
