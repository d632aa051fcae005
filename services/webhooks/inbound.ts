import type { ServiceBroker } from "moleculer";
import { SYSTEM } from "../../lib/access";
import { sha256Hex } from "../../lib/crypto";
import { database } from "../../lib/database";
import { fieldError, forbidden, invalidSignature, notFound, conflict } from "../../lib/errors";
import type { AppContext } from "../../lib/moleculer-types";
import { stageDomainEvents } from "../../lib/outbox";
import { isServiceAvailable } from "../../lib/registry";
import { normalizePhone, PHONE_FORMAT_MESSAGE } from "../contacts/normalize";
import * as repo from "./webhooks.repo";
import type { InboundParams } from "./webhooks.schemas";
import { open } from "../../lib/secret-box";
import { verifyInbound } from "./signature";

/**
 * Replay window for signed inbound bodies: the same signature and body within
 * it is refused. The inbound signature carries no timestamp, so the memory
 * is what stops a replay: 7 days, in PostgreSQL, pruned past that.
 */
export const REPLAY_WINDOW_SECONDS = 7 * 24 * 60 * 60;

function headerOf(ctx: AppContext, name: string): string | undefined {
  const value = ctx.meta.requestHeaders?.[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The phone as E.164, null when none is given; a phone that cannot be a number is a 400, never silently dropped. */
function inboundPhone(phone: string | null | undefined): string | null {
  if (phone === undefined || phone === null || !phone.trim()) return null;
  const normalized = normalizePhone(phone);
  if (!normalized) throw fieldError("phone", PHONE_FORMAT_MESSAGE);
  return normalized;
}

/**
 * `POST /api/webhooks/inbound/{endpointId}`: 404 unknown or not INBOUND,
 * 403 inactive, 401 bad signature, 409 replay, 400 no type; then the contact
 * (by id, or by email found or created exactly once), the event through
 * `events.record`, and an INBOUND delivery record.
 */
export async function receiveInbound(
  broker: ServiceBroker,
  ctx: AppContext,
  params: InboundParams,
): Promise<{ received: true; deliveryId: string }> {
  const endpoint = await repo.findEndpointById(params.endpointId);
  if (!endpoint || endpoint.direction !== "INBOUND") throw notFound("Webhook endpoint");
  if (!endpoint.active) throw forbidden("Webhook endpoint is inactive");

  const raw = ctx.meta.rawBody ?? "";
  const signature = headerOf(ctx, "x-webhook-signature");
  // Read once; the request's bytes and headers must not travel on in the meta of the calls below.
  delete ctx.meta.rawBody;
  delete ctx.meta.requestHeaders;
  let digest: string | null = null;
  if (endpoint.secret_sealed) {
    if (!verifyInbound(open(endpoint.secret_sealed), raw, signature)) {
      throw invalidSignature(
        signature ? "X-Webhook-Signature does not match the body" : "X-Webhook-Signature is missing",
      );
    }
    digest = sha256Hex(`${signature!.trim().toLowerCase()}.${raw}`);
    if (!(await repo.acceptOnce(endpoint.id, digest, REPLAY_WINDOW_SECONDS))) {
      throw conflict("This signed body was already received in the last 7 days (replay)");
    }
  }

  try {
    if (!params.type) throw fieldError("type", "is required");
    const workspaceId = endpoint.workspace_id;
    const contactId = await resolveContact(broker, ctx, workspaceId, {
      ...params,
      phone: inboundPhone(params.phone),
    });
    const event = (await ctx.call(
      "events.record",
      { type: params.type, contactId, metadata: params.metadata ?? {} },
      { meta: { principal: SYSTEM, workspaceId } },
    )) as { id: string };
    const { type, email, contactId: givenContactId, firstName, lastName, phone, metadata } = params;
    const payload = { type, email, contactId: givenContactId, firstName, lastName, phone, metadata };
    const deliveryId = await repo.insertInboundDelivery(
      workspaceId,
      endpoint.id,
      params.type,
      payload,
      event.id,
    );
    return { received: true, deliveryId };
  } catch (err) {
    // A request that failed may be sent again with the same signature.
    if (digest) await repo.forgetReplay(endpoint.id, digest).catch(() => undefined);
    throw err;
  }
}

async function resolveContact(
  broker: ServiceBroker,
  ctx: AppContext,
  workspaceId: string,
  params: InboundParams,
): Promise<string | null> {
  if (params.contactId && (await repo.contactExists(workspaceId, params.contactId))) return params.contactId;
  const email = params.email?.trim().toLowerCase();
  if (!email) {
    if (params.contactId) throw notFound("Contact");
    return null;
  }
  const seed = {
    email,
    firstName: params.firstName?.trim() || null,
    lastName: params.lastName?.trim() || null,
    phone: params.phone ?? null,
  };
  const contact = await (
    await database()
  ).transaction(async (transaction) => {
    const found = await repo.upsertContactByEmail(workspaceId, seed, transaction);
    if (found.created) {
      const data = {
        contactId: found.id,
        email: found.email,
        firstName: found.firstName,
        lastName: found.lastName,
      };
      await stageDomainEvents(transaction, workspaceId, [{ type: "contact.created", data }]);
    }
    return found;
  });
  if (contact.created && isServiceAvailable(broker, "segments")) {
    await ctx.call(
      "segments.evaluateContacts",
      { contactIds: [contact.id] },
      { meta: { principal: SYSTEM, workspaceId } },
    );
  }
  return contact.id;
}
