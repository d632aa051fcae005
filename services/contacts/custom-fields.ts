import type { FieldIssue } from "../../lib/errors";

/** Custom contact field definitions and the pure rules that check and coerce their values. */

export const CUSTOM_FIELD_TYPES = ["text", "number", "date", "boolean", "select", "multi-select"] as const;
export type CustomFieldType = (typeof CUSTOM_FIELD_TYPES)[number];

export interface CustomFieldDef {
  key: string;
  type: CustomFieldType;
  options: string[];
  required: boolean;
}

const DATE_RE = /^\d{4}-\d{2}-\d{2}$/;

function validDate(value: string): boolean {
  if (!DATE_RE.test(value)) return false;
  const d = new Date(`${value}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === value;
}

/**
 * Check one value against its definition. With `coerce` (CSV cells), text
 * forms are accepted: "42" for number, "true"/"yes"/"1" for boolean, a JSON
 * array or `a;b` for multi-select. Returns the stored value or an error message.
 */
export function checkCustomValue(
  def: CustomFieldDef,
  raw: unknown,
  coerce = false,
): { value?: unknown; error?: string } {
  let value = raw;
  switch (def.type) {
    case "text":
      if (typeof value !== "string") return { error: "must be a string" };
      if (value.length > 10_000) return { error: "must be at most 10000 characters" };
      return { value };
    case "number":
      if (coerce && typeof value === "string" && value.trim() !== "") value = Number(value);
      if (typeof value !== "number" || !Number.isFinite(value)) return { error: "must be a number" };
      return { value };
    case "date":
      if (typeof value !== "string" || !validDate(value)) return { error: "must be a date (YYYY-MM-DD)" };
      return { value };
    case "boolean":
      if (coerce && typeof value === "string") {
        const v = value.trim().toLowerCase();
        if (["true", "yes", "1"].includes(v)) value = true;
        else if (["false", "no", "0"].includes(v)) value = false;
      }
      if (typeof value !== "boolean") return { error: "must be a boolean" };
      return { value };
    case "select":
      if (typeof value !== "string" || !def.options.includes(value)) {
        return { error: `must be one of ${def.options.join(", ")}` };
      }
      return { value };
    case "multi-select":
      if (coerce && typeof value === "string") {
        const text = value.trim();
        if (text.startsWith("[")) {
          try {
            value = JSON.parse(text);
          } catch {
            return { error: "must be a JSON array or a ;-separated list" };
          }
        } else
          value = text
            ? text
                .split(";")
                .map((s) => s.trim())
                .filter(Boolean)
            : [];
      }
      if (!Array.isArray(value) || value.some((v) => typeof v !== "string" || !def.options.includes(v))) {
        return { error: `must be an array of values among ${def.options.join(", ")}` };
      }
      return { value: [...new Set(value as string[])] };
  }
}

/**
 * Check a `customFields` object (a create body or a PATCH's changes; `null`
 * removes a key). Unknown keys and wrong types are issues naming `customFields.<key>`.
 */
export function checkCustomFields(
  defs: CustomFieldDef[],
  values: Record<string, unknown>,
  coerce = false,
): { values: Record<string, unknown>; issues: FieldIssue[] } {
  const byKey = new Map(defs.map((d) => [d.key, d]));
  const out: Record<string, unknown> = {};
  const issues: FieldIssue[] = [];
  for (const [key, raw] of Object.entries(values)) {
    const def = byKey.get(key);
    if (!def) {
      issues.push({ field: `customFields.${key}`, message: "is not a defined custom field" });
      continue;
    }
    if (raw === null) {
      out[key] = null;
      continue;
    }
    const checked = checkCustomValue(def, raw, coerce);
    if (checked.error) issues.push({ field: `customFields.${key}`, message: checked.error });
    else out[key] = checked.value;
  }
  return { values: out, issues };
}

/** Required fields missing from the stored result. */
export function missingRequired(defs: CustomFieldDef[], stored: Record<string, unknown>): FieldIssue[] {
  return defs
    .filter((d) => d.required && (stored[d.key] === undefined || stored[d.key] === null))
    .map((d) => ({ field: `customFields.${d.key}`, message: "is required" }));
}
