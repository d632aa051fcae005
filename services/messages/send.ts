import type { Static } from "@sinclair/typebox";
import { SYSTEM } from "../../lib/access";
import { newId } from "../../lib/crypto";
import { fieldError, notFound } from "../../lib/errors";
import type { AppContext } from "../../lib/moleculer-types";
import { workspaceOf } from "../../lib/tenancy";
import { prepareContent } from "../templates/authoring";
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
import type { MessageView, schemas } from "./messages.schemas";

/**
 * `POST {ws}/messages`: resolve the recipient and content, run the checks in
 * the contract's order, and queue the message (or record it suppressed). The
 * send itself follows in the worker (sender.ts).
 */

type CreateParams = Static<typeof schemas.create>;

interface SendSettings {
  timezone?: string;
  quietHours?: QuietHours | null;
  frequencyCap?: FrequencyCap | null;
}

const HOUR_MS = 3_600_000;

function call<T>(ctx: AppContext, action: string, params: object): Promise<T> {
  return ctx.call(action, params, {
    meta: { principal: SYSTEM, workspaceId: workspaceOf(ctx) },
  }) as Promise<T>;
}

/** A 404 naming the field when another area does not know the id. */
async function known<T>(promise: Promise<T>, what: string, field: string, id: string): Promise<T> {
  try {
    return await promise;
  } catch (err) {
    if ((err as { code?: number }).code === 404)
      throw notFound(what, { field, message: `no ${what.toLowerCase()} ${id}` });
    throw err;
  }
}

export async function createMessage(ctx: AppContext<CreateParams>, now: Date): Promise<MessageView> {
  const ws = workspaceOf(ctx);
  const p = ctx.params;
  if (!p.contactId && !p.to) throw fieldError("contactId", "or `to` is required");
  if (p.templateId && p.content) throw fieldError("content", "must not be given with templateId");
  if (!p.templateId && !p.content) throw fieldError("templateId", "or `content` is required");
  if (p.channel === "push" && !p.contactId) throw fieldError("contactId", "is required for push");
  // Providers per workspace arrive with the providers area; until then none exists to name.
  if (p.providerId)
    throw notFound("Provider", { field: "providerId", message: `no provider ${p.providerId}` });

  let content = null;
  if (p.templateId) {
    const resolved = await known(
      call<ResolvedTemplate>(ctx, "templates.resolve", { templateId: p.templateId }),
      "Template",
      "templateId",
      p.templateId,
    );
    if (resolved.template.channel !== p.channel)
      throw fieldError("templateId", `is a ${resolved.template.channel} template, not ${p.channel}`);
  } else {
    content = await prepareContent(p.channel, p.content ?? {});
  }

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

  const raw = p.to ?? (contact ? addressOf(p.channel, contact) : null);
  if (!raw) throw fieldError("to", `is required: the contact has no ${p.channel} address`);
  const address = normalizeAddress(p.channel, raw);
  const transactional = p.transactional ?? false;

  const workspace = await call<{ settings?: SendSettings }>(ctx, "workspaces.get", { workspaceId: ws });
  const settings = workspace.settings ?? {};
  const dncType = dncTypeOf(p.channel);
  const [dnc, recentSends] = await Promise.all([
    address && dncType
      ? call<Array<{ reason: string | null }>>(ctx, "contacts.dncReasons", {
          addresses: [{ type: dncType, value: address }],
        })
      : Promise.resolve([]),
    contact && !transactional && capApplies(settings.frequencyCap, p.channel)
      ? repo.recentSendCount(
          ws,
          contact.id,
          settings.frequencyCap.channels?.length ? settings.frequencyCap.channels : null,
          new Date(now.getTime() - settings.frequencyCap.periodHours * HOUR_MS),
        )
      : Promise.resolve(0),
  ]);
  const reason = suppressionReason({
    channel: p.channel,
    address,
    transactional,
    topic: p.topic,
    contact,
    dncReason: dnc.length ? dnc[0].reason : undefined,
    recentSends,
    cap: settings.frequencyCap,
  });

  let sendAt = p.sendAt ? new Date(p.sendAt) : now;
  let deferred: string | null = null;
  if (!reason && !transactional) {
    const zone = (typeof contact?.timezone === "string" && contact.timezone) || settings.timezone || "UTC";
    const end = quietHoursEnd(sendAt < now ? now : sendAt, zone, settings.quietHours);
    if (end) {
      sendAt = end;
      deferred = "quiet_hours";
    }
  }

  return repo.insertMessage(ws, {
    id: newId(),
    contactId: contact?.id ?? null,
    channel: p.channel,
    status: reason ? "suppressed" : "queued",
    reason,
    to: address ?? raw,
    templateId: p.templateId ?? null,
    locale: p.locale ?? null,
    campaignId: p.campaignId ?? null,
    enrollmentId: null,
    topic: p.topic ?? null,
    transactional,
    providerId: null,
    content,
    variables: p.variables ?? {},
    sendAt,
    deferred,
  });
}
