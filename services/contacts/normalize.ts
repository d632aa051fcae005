import { parsePhoneNumberFromString, type CountryCode } from "libphonenumber-js";
import { CONTACT_FIELDS, fieldsOfKind, type ContactInput, type ContactWrite } from "./fields";
import type { FieldIssue } from "../../lib/errors";

/**
 * Pure normalisation and validation of contact input. Each function returns
 * the stored form or pushes a FieldIssue naming the field; the caller turns
 * the issues into one 400.
 */

// Pragmatic address check (local@domain.tld, no spaces); the mailbox itself is verified by sending.
const EMAIL_RE = /^[^\s@"<>(),;:\\[\]]+@[^\s@"<>(),;:\\[\]]+\.[^\s@"<>(),;:\\[\]]{2,}$/;

export function normalizeEmail(value: string): string | null {
  const email = value.trim().toLowerCase();
  if (email.length > 254 || !EMAIL_RE.test(email)) return null;
  return email;
}

/**
 * E.164, or null when the text cannot be a phone number (a national number
 * needs `defaultCountry`). Any *possible* number is kept: the numbering-plan
 * metadata behind "valid" lags new ranges and rejects reserved fictional ones
 * (`+15550100111`), and an import must not lose real contacts over it.
 */
export function normalizePhone(value: string, defaultCountry?: string): string | null {
  const parsed = parsePhoneNumberFromString(value.trim(), defaultCountry as CountryCode | undefined);
  if (!parsed || !parsed.isPossible()) return null;
  return parsed.number;
}

export const PHONE_FORMAT_MESSAGE =
  "must be a phone number in international format (E.164, e.g. +14155552671)";

/** The IANA zone in its canonical case (`europe/paris` → `Europe/Paris`) when the runtime knows it, else null. */
export function normalizeTimezone(value: string): string | null {
  const zone = value.trim();
  if (!zone) return null;
  try {
    return new Intl.DateTimeFormat("en-US", { timeZone: zone }).resolvedOptions().timeZone;
  } catch {
    return null;
  }
}

/** BCP 47 tag in canonical case (`en-us` → `en-US`), or null. */
export function normalizeLocale(value: string): string | null {
  try {
    const [canonical] = Intl.getCanonicalLocales(value.trim().replace(/_/g, "-"));
    return canonical ?? null;
  } catch {
    return null;
  }
}

/** Trimmed, non-empty, unique tags in their first order. */
export function normalizeTags(tags: string[]): string[] {
  return [...new Set(tags.map((t) => t.trim()).filter(Boolean))];
}

/** The text fields with nothing more than a length to check, and each one's longest length. */
const TEXT_FIELDS = fieldsOfKind("text");

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Validate and normalise the writable fields present in `input`. `null` or an
 * empty string clears a field. Returns the write and the issues found.
 */
export function normalizeContactInput(
  input: ContactInput,
  options: { defaultCountry?: string } = {},
): { write: ContactWrite; issues: FieldIssue[] } {
  const write: ContactWrite = {};
  const issues: FieldIssue[] = [];
  const blank = (v: unknown) => v === null || (typeof v === "string" && v.trim() === "");

  if (input.email !== undefined) {
    if (blank(input.email)) write.email = null;
    else if (typeof input.email !== "string") issues.push({ field: "email", message: "must be a string" });
    else {
      const email = normalizeEmail(input.email);
      if (email) write.email = email;
      else issues.push({ field: "email", message: "must be a valid email address" });
    }
  }
  if (input.phone !== undefined) {
    if (blank(input.phone)) write.phone = null;
    else if (typeof input.phone !== "string") issues.push({ field: "phone", message: "must be a string" });
    else {
      const phone = normalizePhone(input.phone, options.defaultCountry);
      if (phone) write.phone = phone;
      else issues.push({ field: "phone", message: PHONE_FORMAT_MESSAGE });
    }
  }
  if (input.timezone !== undefined) {
    if (blank(input.timezone)) write.timezone = null;
    else {
      const zone = typeof input.timezone === "string" ? normalizeTimezone(input.timezone) : null;
      if (zone) write.timezone = zone;
      else issues.push({ field: "timezone", message: "must be an IANA time zone (e.g. Europe/Paris)" });
    }
  }
  if (input.locale !== undefined) {
    if (blank(input.locale)) write.locale = null;
    else {
      const locale = typeof input.locale === "string" ? normalizeLocale(input.locale) : null;
      if (locale) write.locale = locale;
      else issues.push({ field: "locale", message: "must be a BCP 47 language tag (e.g. en-US)" });
    }
  }
  for (const field of TEXT_FIELDS) {
    const value = input[field];
    const max = CONTACT_FIELDS[field].maxLength;
    if (value === undefined) continue;
    if (blank(value)) write[field] = null;
    else if (typeof value !== "string") issues.push({ field, message: "must be a string" });
    else if (value.trim().length > max) issues.push({ field, message: `must be at most ${max} characters` });
    else write[field] = value.trim();
  }
  if (input.tags !== undefined) {
    if (input.tags === null) write.tags = [];
    else if (!Array.isArray(input.tags) || input.tags.some((t) => typeof t !== "string")) {
      issues.push({ field: "tags", message: "must be an array of strings" });
    } else if (input.tags.some((t: string) => t.length > 100)) {
      issues.push({ field: "tags", message: "each tag must be at most 100 characters" });
    } else if (input.tags.length > 200) {
      issues.push({ field: "tags", message: "must hold at most 200 tags" });
    } else write.tags = normalizeTags(input.tags);
  }
  for (const field of fieldsOfKind("json")) {
    const value = input[field];
    if (value === undefined) continue;
    if (value === null) write[field] = {};
    else if (!isPlainObject(value)) issues.push({ field, message: "must be an object" });
    else {
      const bad = Object.keys(value).find((k) => !k || k.length > 100 || k.includes("."));
      if (bad !== undefined)
        issues.push({ field: `${field}.${bad}`, message: "keys must be 1-100 characters without dots" });
      else write[field] = value;
    }
  }
  return { write, issues };
}

/** Whether a row would still have one of the identifying fields (a chatapp1 chat is one: the bot's contacts have only it). */
export function hasIdentity(row: {
  email?: string | null;
  phone?: string | null;
  externalId?: string | null;
  attributes?: Record<string, unknown> | null;
}): boolean {
  const chatId = row.attributes?.chatapp1ChatId;
  const chat = (typeof chatId === "string" && chatId !== "") || typeof chatId === "number";
  return Boolean(row.email || row.phone || row.externalId || chat);
}

/** Apply a key-by-key patch (null removes a key) to a JSON object. */
export function mergeObject(
  base: Record<string, unknown>,
  patch: Record<string, unknown>,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = value;
  }
  return out;
}
