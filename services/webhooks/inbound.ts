import { sha256Hex } from "../../lib/crypto";
import { fieldError, forbidden, invalidSignature, notFound, conflict } from "../../lib/errors";
import type { AppContext } from "../../lib/moleculer-types";
import * as repo from "./endpoints.repo";
import * as inboundRepo from "./inbound.repo";
import type { InboundParams } from "./webhooks.schemas";
import { open } from "../../lib/secret-box";
import { systemCall } from "../../lib/system-call";
import { verifyInbound } from "./signature";
import type { WorkspaceId } from "../../lib/tenancy";

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

/**
 * `POST /api/webhooks/inbound/{endpointId}`: 404 unknown or not INBOUND,
 * 403 inactive, 401 bad signature, 409 replay, 400 no type; then the contact
 * (by id, or by email found or created exactly once), the event through
 * `events.record`, and an INBOUND delivery record.
 */
export async function receiveInbound(
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
    if (!(await inboundRepo.acceptOnce(endpoint.id, digest, REPLAY_WINDOW_SECONDS))) {
      throw conflict("This signed body was already received in the last 7 days (replay)");
    }
  }

  try {
    if (!params.type) throw fieldError("type", "is required");
    const workspaceId = endpoint.workspace_id;
    const contactId = await resolveContact(ctx, workspaceId, params);
    const event = await systemCall<{ id: string }>(ctx, workspaceId, "events.record", {
      type: params.type,
      contactId,
      metadata: params.metadata ?? {},
    });
    const { type, email, contactId: givenContactId, firstName, lastName, phone, metadata } = params;
    const payload = { type, email, contactId: givenContactId, firstName, lastName, phone, metadata };
    const deliveryId = await inboundRepo.insertInboundDelivery(
      workspaceId,
      endpoint.id,
      params.type,
      payload,
      event.id,
    );
    return { received: true, deliveryId };
  } catch (err) {
    // A request that failed may be sent again with the same signature.
    if (digest) await inboundRepo.forgetReplay(endpoint.id, digest).catch(() => undefined);
    throw err;
  }
}

/**
 * The event's contact: the given id when it is one of the workspace's
 * contacts, else the contact of the email through `contacts.identify` (the
 * one contact-write path: found or created exactly once, with its facts,
 * segments and scoring as for any write).
 */
async function resolveContact(
  ctx: AppContext,
  workspaceId: WorkspaceId,
  params: InboundParams,
): Promise<string | null> {
  if (params.contactId) {
    const found = await systemCall<string[]>(ctx, workspaceId, "contacts.existingIds", {
      ids: [params.contactId],
    });
    if (found.length) return params.contactId;
  }
  const email = params.email?.trim().toLowerCase();
  if (!email) {
    if (params.contactId) throw notFound("Contact");
    return null;
  }
  const { contactId } = await systemCall<{ contactId: string }>(ctx, workspaceId, "contacts.identify", {
    contact: { email, firstName: params.firstName, lastName: params.lastName, phone: params.phone },
    source: "webhook",
  });
  return contactId;
}
