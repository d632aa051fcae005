import { countMessages } from "../../lib/business-metrics";
import type { Static } from "@sinclair/typebox";
import { newId } from "../../lib/crypto";
import { fieldError, isNotFound, notFound } from "../../lib/errors";
import type { AppContext } from "../../lib/moleculer-types";
import { systemCall } from "../../lib/system-call";
import { workspaceOf } from "../../lib/tenancy";
import type { Channel } from "../../lib/channels";
import { prepareContent } from "../templates/authoring";
import type { Content } from "../templates/render";
import type { ResolvedTemplate } from "../templates/templates.schemas";
import {
  addressOf,
  capApplies,
  dncTypeOf,
  normalizeAddress,
  quietHoursEnd,
  suppressionReason,
  type FrequencyCap,
  type QuietHours,
  type SendContact,
} from "./checks";
import * as repo from "./messages.repo";
import type { MessageRow, NewMessage } from "./messages.repo";
import type { schemas } from "./messages.schemas";

/**
 * The send path's front half: resolve recipients and content, run the checks
 * in the contract's order, and queue each message (or record it suppressed).
 * `POST {ws}/messages` is a batch of one; `messages.enqueue` (broadcasts,
 * journeys) checks up to a thousand contacts with one query per check. The
 * send itself follows in the worker (sender.ts).
 */

type CreateParams = Static<typeof schemas.create>;
type EnqueueParams = Static<typeof schemas.enqueue>;

interface SendSettings {
  timezone?: string;
  quietHours?: QuietHours | null;
  frequencyCap?: FrequencyCap | null;
}

/** What every message of one queueing shares: a new message without its recipient, status and time. */
type SendSpec = Omit<NewMessage, "id" | "contactId" | "status" | "reason" | "to" | "sendAt" | "deferred"> & {
  sendAt: Date | null;
};

/** One recipient: its contact (when known), the raw address to reach, and the message's id when the caller chose it. */
interface Recipient {
  contact: SendContact | null;
  to: string;
  id?: string;
}

const HOUR_MS = 3_600_000;

function call<T>(ctx: AppContext, action: string, params: object): Promise<T> {
  return systemCall<T>(ctx, workspaceOf(ctx), action, params);
}

/** A 404 naming the field when another area does not know the id. */
async function known<T>(promise: Promise<T>, what: string, field: string, id: string): Promise<T> {
  try {
    return await promise;
  } catch (err) {
    if (isNotFound(err)) throw notFound(what, { field, message: `no ${what.toLowerCase()} ${id}` });
    throw err;
  }
}

/** The template must exist and be of the send's channel; answers it. */
async function checkTemplate(
  ctx: AppContext,
  templateId: string,
  channel: Channel,
): Promise<ResolvedTemplate> {
  const resolved = await known(
    call<ResolvedTemplate>(ctx, "templates.resolve", { templateId }),
    "Template",
    "templateId",
    templateId,
  );
  if (resolved.template.channel !== channel)
    throw fieldError("templateId", `is a ${resolved.template.channel} template, not ${channel}`);
  return resolved;
}

/**
 * chatapp2's own rules, checked now so the caller hears at once (the
 * providers area holds the synced templates and the windows): a template
 * send names an approved template with its parameter count (400), a
 * free-form one to `to` falls in the 24-hour window (409). No `to`: a batch,
 * whose free-form sends the provider itself refuses outside the window.
 */
async function checkChatapp2(ctx: AppContext, to: string | null, content: Content): Promise<void> {
  await call(ctx, "providers.chatapp2SendCheck", { to, content });
}

/** A named provider must be one of the workspace's for the channel (404 naming `providerId`). */
async function checkProvider(
  ctx: AppContext,
  providerId: string | undefined,
  channel: Channel,
): Promise<void> {
  if (!providerId) return;
  if (channel !== "email" && channel !== "sms")
    throw fieldError(
      "providerId",
      `is for email and sms sends; ${channel} goes through its channel's provider`,
    );
  await known(call(ctx, "providers.known", { channel, providerId }), "Provider", "providerId", providerId);
}

export async function createMessage(
  ctx: AppContext,
  p: Omit<CreateParams, "workspaceId">,
  now: Date,
  /** A send made at once: the message is inserted already claimed for this long (see `repo.insertMessages`). */
  claimLeaseMs: number | null = null,
): Promise<MessageRow> {
  const ws = workspaceOf(ctx);
  if (!p.contactId && !p.to) throw fieldError("contactId", "or `to` is required");
  if (p.templateId && p.content) throw fieldError("content", "must not be given with templateId");
  if (!p.templateId && !p.content) throw fieldError("templateId", "or `content` is required");
  if (p.channel === "push" && !p.contactId) throw fieldError("contactId", "is required for push");
  await checkProvider(ctx, p.providerId, p.channel);

  let content = null;
  let template: ResolvedTemplate | null = null;
  if (p.templateId) template = await checkTemplate(ctx, p.templateId, p.channel);
  else content = await prepareContent(p.channel, p.content ?? {});

  let contact: SendContact | null = null;
  if (p.contactId) {
    contact = await known(
      call<SendContact>(ctx, "contacts.get", { workspaceId: ws, contactId: p.contactId }),
      "Contact",
      "contactId",
      p.contactId,
    );
  } else if (p.to && (p.channel === "email" || p.channel === "sms")) {
    contact = await call<SendContact | null>(ctx, "contacts.byAddress", {
      type: p.channel === "email" ? "email" : "phone",
      value: p.to,
    });
  }

  const to = p.to ?? (contact ? addressOf(p.channel, contact) : null);
  if (!to) throw fieldError("to", `is required: the contact has no ${p.channel} address`);
  if (p.channel === "chatapp2")
    await checkChatapp2(ctx, normalizeAddress(p.channel, to), content ?? template?.template.content ?? {});
  const [message] = await queueMessages(
    ctx,
    {
      channel: p.channel,
      templateId: p.templateId ?? null,
      content,
      locale: p.locale ?? null,
      campaignId: p.campaignId ?? null,
      enrollmentId: null,
      topic: p.topic ?? null,
      transactional: p.transactional ?? false,
      providerId: p.providerId ?? null,
      variables: p.variables ?? {},
      sendAt: p.sendAt ? new Date(p.sendAt) : null,
    },
    [{ contact, to }],
    now,
    claimLeaseMs,
  );
  return message;
}

export interface EnqueueResult {
  queued: number;
  suppressed: number;
  skipped: Array<{ contactId: string; reason: "not_found" | "no_address" | "already_queued" }>;
  messageIds: string[];
}

/** A template to many contacts (broadcasts, journeys): each checked as `POST {ws}/messages` would. */
export async function enqueueMessages(ctx: AppContext<EnqueueParams>, now: Date): Promise<EnqueueResult> {
  const p = ctx.params;
  await checkProvider(ctx, p.providerId, p.channel);
  const template = await checkTemplate(ctx, p.templateId, p.channel);
  if (p.channel === "chatapp2") await checkChatapp2(ctx, null, template.template.content);
  if (p.messageIds && p.messageIds.length !== p.contactIds.length)
    throw fieldError("messageIds", "must give one id per contact");
  const idOf = new Map(p.messageIds?.map((id, i) => [p.contactIds[i], id]));
  const [contacts, existing] = await Promise.all([
    call<SendContact[]>(ctx, "contacts.forSend", { contactIds: p.contactIds }),
    p.messageIds ? repo.existingMessageIds(workspaceOf(ctx), p.messageIds) : new Set<string>(),
  ]);
  const byId = new Map(contacts.map((c) => [c.id, c]));
  const recipients: Recipient[] = [];
  const skipped: EnqueueResult["skipped"] = [];
  for (const contactId of new Set(p.contactIds)) {
    const contact = byId.get(contactId);
    const to = contact ? addressOf(p.channel, contact) : null;
    const id = idOf.get(contactId);
    if (id && existing.has(id)) skipped.push({ contactId, reason: "already_queued" });
    else if (!contact) skipped.push({ contactId, reason: "not_found" });
    else if (!to) skipped.push({ contactId, reason: "no_address" });
    else recipients.push({ contact, to, id });
  }
  const messages = await queueMessages(
    ctx,
    {
      channel: p.channel,
      templateId: p.templateId,
      content: null,
      locale: null,
      campaignId: p.campaignId ?? null,
      enrollmentId: p.enrollmentId ?? null,
      topic: p.topic ?? null,
      transactional: p.transactional ?? false,
      providerId: p.providerId ?? null,
      variables: p.variables ?? {},
      sendAt: p.sendAt ? new Date(p.sendAt) : null,
    },
    recipients,
    now,
  );
  return {
    queued: messages.filter((m) => m.status === "queued").length,
    suppressed: messages.filter((m) => m.status === "suppressed").length,
    skipped,
    messageIds: messages.map((m) => m.id),
  };
}

/**
 * The checks for every recipient, with one query each (do-not-contact, the
 * frequency cap's counts), then one insert. Quiet hours defer a send to the
 * window's end in the contact's zone (else the workspace's).
 */
async function queueMessages(
  ctx: AppContext,
  spec: SendSpec,
  recipients: Recipient[],
  now: Date,
  claimLeaseMs: number | null = null,
): Promise<MessageRow[]> {
  if (!recipients.length) return [];
  const ws = workspaceOf(ctx);
  const workspace = await call<{ settings?: SendSettings }>(ctx, "workspaces.get", { workspaceId: ws });
  const settings = workspace.settings ?? {};
  const cap = settings.frequencyCap;
  const dncType = dncTypeOf(spec.channel);
  const addresses = recipients.map((r) => normalizeAddress(spec.channel, r.to));
  const contactIds = recipients.flatMap((r) => (r.contact ? [r.contact.id] : []));
  const [dnc, recentSends] = await Promise.all([
    dncType && addresses.some((a) => a)
      ? call<Array<{ value: string; reason: string | null }>>(ctx, "contacts.dncReasons", {
          addresses: addresses.flatMap((value) => (value ? [{ type: dncType, value }] : [])),
        })
      : Promise.resolve([]),
    !spec.transactional && capApplies(cap, spec.channel)
      ? repo.recentSendCounts(
          ws,
          contactIds,
          cap.channels?.length ? cap.channels : null,
          new Date(now.getTime() - cap.periodHours * HOUR_MS),
        )
      : Promise.resolve(new Map<string, number>()),
  ]);
  const dncByAddress = new Map(dnc.map((d) => [d.value, d.reason]));
  const requested = spec.sendAt && spec.sendAt > now ? spec.sendAt : now;

  const messages: NewMessage[] = recipients.map((recipient, i) => {
    const address = addresses[i];
    const { contact } = recipient;
    const reason = suppressionReason({
      channel: spec.channel,
      address,
      transactional: spec.transactional,
      topic: spec.topic,
      contact,
      dncReason: address && dncByAddress.has(address) ? dncByAddress.get(address) : undefined,
      recentSends: contact ? (recentSends.get(contact.id) ?? 0) : 0,
      cap,
    });
    let sendAt = spec.sendAt ?? now;
    let deferred: string | null = null;
    if (!reason && !spec.transactional) {
      const zone = (typeof contact?.timezone === "string" && contact.timezone) || settings.timezone || "UTC";
      const end = quietHoursEnd(requested, zone, settings.quietHours);
      if (end) {
        sendAt = end;
        deferred = "quiet_hours";
      }
    }
    return {
      id: recipient.id ?? newId(),
      contactId: contact?.id ?? null,
      channel: spec.channel,
      status: reason ? "suppressed" : "queued",
      reason,
      to: address ?? recipient.to,
      templateId: spec.templateId,
      locale: spec.locale,
      campaignId: spec.campaignId,
      enrollmentId: spec.enrollmentId,
      topic: spec.topic,
      transactional: spec.transactional,
      providerId: spec.providerId,
      content: spec.content,
      variables: spec.variables,
      sendAt,
      deferred,
    };
  });
  const inserted = await repo.insertMessages(ws, messages, claimLeaseMs);
  for (const status of ["queued", "suppressed"])
    countMessages(
      ctx.broker.metrics,
      spec.channel,
      status,
      // One inserted already claimed was queued (and taken at once).
      inserted.filter((m) => (m.status === "sending" ? "queued" : m.status) === status).length,
    );
  return inserted;
}

/** Whether the workspace's frequency cap holds a contact's non-transactional send on `channel` now, and until when. */
export async function capState(
  ctx: AppContext<{ contactId: string; channel: Channel }>,
  now: Date,
): Promise<{ capped: boolean; freeAt: Date | null }> {
  const ws = workspaceOf(ctx);
  const workspace = await call<{ settings?: SendSettings }>(ctx, "workspaces.get", { workspaceId: ws });
  const cap = workspace.settings?.frequencyCap;
  if (!capApplies(cap, ctx.params.channel)) return { capped: false, freeAt: null };
  const window = await repo.capWindow(
    ws,
    ctx.params.contactId,
    cap.channels?.length ? cap.channels : null,
    new Date(now.getTime() - cap.periodHours * HOUR_MS),
  );
  if (window.count < cap.count || !window.oldest) return { capped: false, freeAt: null };
  return { capped: true, freeAt: new Date(window.oldest.getTime() + cap.periodHours * HOUR_MS) };
}
