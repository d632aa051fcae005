import { LRUCache } from "lru-cache";
import { type Channel, OPT_IN_CHANNELS } from "../../lib/channels";
import { normalizeEmail, normalizePhone } from "../contacts/normalize";

/**
 * The send path's checks (contract 3), pure: the address a channel reaches,
 * the suppression reason in the contract's order, and quiet hours.
 */

export const SUPPRESSION_REASONS = [
  "invalid_address",
  "dnc",
  "bounced_before",
  "unsubscribed",
  "no_consent",
  "frequency_cap",
] as const;
export type SuppressionReason = (typeof SUPPRESSION_REASONS)[number];

export interface SendContact {
  id: string;
  email?: string | null;
  phone?: string | null;
  timezone?: string | null;
  consent?: Record<string, { status?: string | null } | undefined> | null;
  attributes?: Record<string, unknown> | null;
}

const CONSENT_REQUIRED = new Set<Channel>(OPT_IN_CHANNELS);

/** The contact's address on a channel (push reaches the contact's subscriptions, so its id). */
export function addressOf(channel: Channel, contact: SendContact): string | null {
  switch (channel) {
    case "email":
      return contact.email ?? null;
    case "sms":
    case "chatapp2":
      return contact.phone ?? null;
    case "chatapp1": {
      const chatId = contact.attributes?.chatapp1ChatId;
      return typeof chatId === "string" || typeof chatId === "number" ? String(chatId) : null;
    }
    case "push":
      return contact.id;
  }
}

/** An address as stored and compared (email lower-cased, phone E.164), or null when it cannot be one. */
export function normalizeAddress(channel: Channel, to: string): string | null {
  if (channel === "email") return normalizeEmail(to);
  if (channel === "sms" || channel === "chatapp2") return normalizePhone(to);
  const value = to.trim();
  return value.length > 0 && value.length <= 254 ? value : null;
}

/** The do-not-contact list's kind for a channel's address. */
export const dncTypeOf = (channel: Channel): "email" | "phone" | null =>
  channel === "email" ? "email" : channel === "sms" || channel === "chatapp2" ? "phone" : null;

export interface FrequencyCap {
  count: number;
  periodHours: number;
  channels?: string[] | null;
}

export const capApplies = (cap: FrequencyCap | null | undefined, channel: Channel): cap is FrequencyCap =>
  !!cap && cap.count > 0 && cap.periodHours > 0 && (!cap.channels?.length || cap.channels.includes(channel));

export interface CheckInput {
  channel: Channel;
  /** The normalised address, or null when there is none valid. */
  address: string | null;
  transactional: boolean;
  topic?: string | null;
  contact: SendContact | null;
  /** The do-not-contact entry's reason for the address (`bounce`: a hard bounce), undefined when none. */
  dncReason?: string | null;
  /** Non-transactional sends to this contact in the cap's period on capped channels. */
  recentSends: number;
  cap?: FrequencyCap | null;
}

/** The first reason not to send, in the contract's order; null to send. `transactional` skips consent, topic and cap. */
export function suppressionReason(input: CheckInput): SuppressionReason | null {
  if (!input.address) return "invalid_address";
  if (input.dncReason !== undefined) return input.dncReason === "bounce" ? "bounced_before" : "dnc";
  if (input.transactional) return null;
  const consent = input.contact?.consent?.[input.channel]?.status;
  if (consent === "opted_out") return "unsubscribed";
  const topics = input.contact?.attributes?.topics as Record<string, unknown> | undefined;
  if (input.topic && topics?.[input.topic] === false) return "unsubscribed";
  if (CONSENT_REQUIRED.has(input.channel) && consent !== "opted_in") return "no_consent";
  if (capApplies(input.cap, input.channel) && input.recentSends >= input.cap.count) return "frequency_cap";
  return null;
}

export interface QuietHours {
  start: string;
  end: string;
}

const minutesOf = (hhmm: string): number | null => {
  const match = /^([01]\d|2[0-3]):([0-5]\d)$/.exec(hhmm);
  return match ? Number(match[1]) * 60 + Number(match[2]) : null;
};

/** Clock formatters by zone (IANA zones, validated on write: a few hundred at most): building one costs far more than using it. */
const clocks = new LRUCache<string, Intl.DateTimeFormat>({ max: 1_000 });

function clockIn(timeZone: string): Intl.DateTimeFormat {
  let clock = clocks.get(timeZone);
  if (!clock) {
    const options = { hour: "2-digit", minute: "2-digit", hourCycle: "h23" } as const;
    try {
      clock = new Intl.DateTimeFormat("en-GB", { ...options, timeZone });
    } catch {
      clock = new Intl.DateTimeFormat("en-GB", { ...options, timeZone: "UTC" });
    }
    clocks.set(timeZone, clock);
  }
  return clock;
}

/** Minutes past midnight at `now` in `timeZone` (UTC when the zone is unknown). */
function localMinutes(now: Date, timeZone: string): number {
  const parts = clockIn(timeZone).formatToParts(now);
  const hour = Number(parts.find((p) => p.type === "hour")?.value ?? 0);
  const minute = Number(parts.find((p) => p.type === "minute")?.value ?? 0);
  return hour * 60 + minute;
}

/**
 * When `now` falls inside quiet hours in `timeZone`, the moment they end
 * (the window may cross midnight: 21:00-08:00); else null.
 */
export function quietHoursEnd(
  now: Date,
  timeZone: string,
  quiet: QuietHours | null | undefined,
): Date | null {
  if (!quiet) return null;
  const start = minutesOf(quiet.start);
  const end = minutesOf(quiet.end);
  if (start === null || end === null || start === end) return null;
  const local = localMinutes(now, timeZone);
  const inside = start < end ? local >= start && local < end : local >= start || local < end;
  if (!inside) return null;
  const wait = (end - local + 1440) % 1440;
  const at = new Date(now.getTime() + wait * 60_000);
  at.setUTCSeconds(0, 0);
  return at;
}
