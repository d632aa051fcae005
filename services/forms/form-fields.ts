import type { FieldIssue } from "../../lib/errors";
import { CONSENT_CHANNELS } from "../../lib/channels";
import { CONTACT_FIELDS } from "../contacts/fields";
import type { FormField } from "./forms.schemas";

/**
 * A form's fields (contract 10), pure: what a definition may say, what a
 * submission must hold, and what it writes to the contact. Keys are the
 * names a submission uses; `mapTo` names a contact field (`email`,
 * `customFields.plan`) or `consent.<channel>`.
 */

/** Contact fields a visitor may write: identity and profile, not the CRM's own (owner, stage, company, tags). */
const MAPPABLE = [
  "email",
  "phone",
  "firstName",
  "lastName",
  "externalId",
  "locale",
  "timezone",
  "country",
  "city",
] as const satisfies ReadonlyArray<keyof typeof CONTACT_FIELDS>;
/** Names a submission carries beside the fields. */
const RESERVED_KEYS = ["_hp", "formId", "sessionId", "pageUrl"];
const TEXT_MAX = 1000;
const TEXTAREA_MAX = 10_000;

type Target =
  | { kind: "field"; name: string }
  | { kind: "json"; doc: string; key: string }
  | { kind: "consent"; channel: string };

/** What `mapTo` writes, or null when it names nothing a visitor may write. */
export function targetOf(mapTo: string): Target | null {
  const [head, ...rest] = mapTo.split(".");
  if (!rest.length)
    return (MAPPABLE as readonly string[]).includes(head) ? { kind: "field", name: head } : null;
  if (rest.length !== 1 || !/^[A-Za-z0-9_-]{1,100}$/.test(rest[0])) return null;
  if (head === "customFields" || head === "attributes") return { kind: "json", doc: head, key: rest[0] };
  if (head === "consent" && (CONSENT_CHANNELS as readonly string[]).includes(rest[0]))
    return { kind: "consent", channel: rest[0] };
  return null;
}

const hasOptions = (f: FormField) => f.type === "select" || f.type === "radio";

/** Problems of a form's field list, each with its path (`fields[2].mapTo`). */
export function definitionIssues(fields: FormField[]): FieldIssue[] {
  const issues: FieldIssue[] = [];
  const keys = new Set<string>();
  const targets = new Set<string>();
  fields.forEach((f, i) => {
    const at = (name: string, message: string) => issues.push({ field: `fields[${i}].${name}`, message });
    if (keys.has(f.key)) at("key", `${f.key} is used by another field`);
    if (RESERVED_KEYS.includes(f.key)) at("key", `${f.key} is reserved`);
    keys.add(f.key);
    if (hasOptions(f) && !f.options?.length) at("options", `a ${f.type} field needs options`);
    if (!hasOptions(f) && f.type !== "checkbox" && f.options !== undefined)
      at("options", `a ${f.type} field takes no options`);
    const target = f.mapTo ? targetOf(f.mapTo) : null;
    if (f.mapTo && !target)
      at(
        "mapTo",
        `must be a contact field (${MAPPABLE.join(", ")}, customFields.<key>, attributes.<key>) or consent.<channel>`,
      );
    if (f.type === "consent" && target?.kind !== "consent")
      at("mapTo", "a consent field maps to consent.<channel>");
    if (f.type !== "consent" && target?.kind === "consent")
      at("mapTo", "only a consent field maps to consent");
    if (f.type === "email" && target?.kind === "field" && target.name !== "email")
      at("mapTo", "an email field maps to email or a custom field");
    if (f.mapTo && targets.has(f.mapTo)) at("mapTo", `${f.mapTo} is written by another field`);
    if (f.mapTo) targets.add(f.mapTo);
    const rules = f.validation;
    if (rules?.min !== undefined && rules.max !== undefined && rules.min > rules.max)
      at("validation.min", "must not be above max");
    if (rules?.minLength !== undefined && rules.maxLength !== undefined && rules.minLength > rules.maxLength)
      at("validation.minLength", "must not be above maxLength");
  });
  return issues;
}

/** A submitted value's text: form posts give strings (or lists of them), JSON may give anything. */
const textOf = (value: unknown): string | null =>
  typeof value === "string" ? value.trim() : typeof value === "number" ? String(value) : null;
const blank = (value: unknown) =>
  value === undefined ||
  value === null ||
  (typeof value === "string" && !value.trim()) ||
  (Array.isArray(value) && !value.length);
/** A ticked box: `true` in JSON, `on`/`true`/`1`/`yes` from a form post. */
const ticked = (value: unknown) =>
  value === true || (typeof value === "string" && ["on", "true", "1", "yes"].includes(value.toLowerCase()));
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** One field's value from the submission, or the reason it is refused. */
function readValue(f: FormField, raw: unknown): { value: unknown } | { issue: string } {
  const rules = f.validation ?? {};
  if (f.type === "consent" || (f.type === "checkbox" && !f.options?.length)) {
    const value = ticked(raw);
    if (f.required && !value) return { issue: f.type === "consent" ? "must be accepted" : "must be ticked" };
    return { value };
  }
  if (f.type === "checkbox") {
    const list = (Array.isArray(raw) ? raw : [raw]).map(textOf);
    if (list.some((v) => v === null || !f.options!.includes(v)))
      return { issue: `must be among ${f.options!.join(", ")}` };
    return { value: list };
  }
  const text = textOf(raw);
  if (text === null) return { issue: "must be text" };
  if (hasOptions(f))
    return f.options!.includes(text) ? { value: text } : { issue: `must be one of ${f.options!.join(", ")}` };
  if (f.type === "number") {
    const n = Number(text);
    if (!Number.isFinite(n)) return { issue: "must be a number" };
    if (rules.min !== undefined && n < rules.min) return { issue: `must be at least ${rules.min}` };
    if (rules.max !== undefined && n > rules.max) return { issue: `must be at most ${rules.max}` };
    return { value: n };
  }
  if (f.type === "date" && !(DATE.test(text) && !Number.isNaN(Date.parse(`${text}T00:00:00Z`))))
    return { issue: "must be a date such as 2026-01-31" };
  if (f.type === "email" && !EMAIL.test(text)) return { issue: "must be an email address" };
  const max = Math.min(rules.maxLength ?? Infinity, f.type === "textarea" ? TEXTAREA_MAX : TEXT_MAX);
  if (text.length > max) return { issue: `must be at most ${max} characters` };
  if (rules.minLength !== undefined && text.length < rules.minLength)
    return { issue: `must be at least ${rules.minLength} characters` };
  return { value: text };
}

/** The submission's values by key (blank optional fields left out) and its problems by key. */
export function readSubmission(
  fields: FormField[],
  body: Record<string, unknown>,
): { values: Record<string, unknown>; issues: FieldIssue[] } {
  const values: Record<string, unknown> = {};
  const issues: FieldIssue[] = [];
  for (const f of fields) {
    const raw = body[f.key];
    const box = f.type === "consent" || (f.type === "checkbox" && !f.options?.length);
    if (f.type === "hidden" && blank(raw) && f.defaultValue) {
      values[f.key] = f.defaultValue;
      continue;
    }
    if (!box && blank(raw)) {
      if (f.required) issues.push({ field: f.key, message: "is required" });
      continue;
    }
    const read = readValue(f, raw);
    if ("issue" in read) issues.push({ field: f.key, message: read.issue });
    else values[f.key] = read.value;
  }
  return { values, issues };
}

export interface ContactWrite {
  /** Contact fields by name, JSON documents as objects. */
  contact: Record<string, unknown>;
  /** The channels ticked consent fields ask for, each with the text the visitor was shown. */
  consent: Array<{ channel: string; text: string }>;
  /** Which form key wrote each contact field (to name the key when the contact refuses a value). */
  keyOf: Record<string, string>;
}

/** What a submission writes to its contact: mapped fields with a value, and the consent it gives. */
export function contactWriteOf(fields: FormField[], values: Record<string, unknown>): ContactWrite {
  const write: ContactWrite = { contact: {}, consent: [], keyOf: {} };
  for (const f of fields) {
    const target = f.mapTo ? targetOf(f.mapTo) : null;
    const value = values[f.key];
    if (!target || value === undefined) continue;
    if (target.kind === "consent") {
      if (value === true) write.consent.push({ channel: target.channel, text: f.label });
    } else if (target.kind === "field") {
      write.contact[target.name] = typeof value === "string" ? value : String(value);
      write.keyOf[target.name] = f.key;
    } else {
      const doc = (write.contact[target.doc] ??= {}) as Record<string, unknown>;
      doc[target.key] = value;
      write.keyOf[`${target.doc}.${target.key}`] = f.key;
      write.keyOf[target.doc] ??= f.key;
    }
  }
  return write;
}

/** What a known contact has already told, by form key (consent and hidden fields are never prefilled). */
export function prefillOf(fields: FormField[], contact: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of fields) {
    const target = f.mapTo && f.type !== "hidden" ? targetOf(f.mapTo) : null;
    if (!target || target.kind === "consent") continue;
    const value =
      target.kind === "field"
        ? contact[target.name]
        : (contact[target.doc] as Record<string, unknown> | undefined)?.[target.key];
    if (value !== undefined && value !== null && value !== "") out[f.key] = value;
  }
  return out;
}
