import { validationError } from "../../lib/errors";
import { schemaIssues } from "../../lib/schema";
import { isSealed, maskSecret, open, sealUnlessMask } from "../../lib/secret-box";
import { PROVIDER_KINDS, type ProviderType } from "./kinds";

/**
 * A provider's settings at rest, in answers and in use: secret fields are
 * sealed when written, masked in every answer (contract 1), and opened only
 * for the sender. Pure: the service and the repo call these.
 */

type Config = Record<string, unknown>;

/**
 * The settings to store: `incoming` over `current` key by key (null removes
 * a key), checked against the type's schema (400 naming `config.<field>`),
 * each secret sent sealed, and a mask sent back keeping the stored secret.
 */
export function storedConfig(type: ProviderType, incoming: Config, current: Config = {}): Config {
  const merged: Config = { ...current };
  for (const [key, value] of Object.entries(incoming)) {
    if (value === null) delete merged[key];
    else merged[key] = value;
  }
  const issues = schemaIssues(PROVIDER_KINDS[type].config as unknown as Record<string, unknown>, merged);
  if (issues.length) {
    const details = issues.map((i) => ({ ...i, field: i.field ? `config.${i.field}` : "config" }));
    throw validationError(`${details[0].field} ${details[0].message}`, details);
  }
  for (const field of PROVIDER_KINDS[type].secretFields) {
    const value = incoming[field];
    if (typeof value !== "string") continue;
    const stored = typeof current[field] === "string" ? (current[field] as string) : undefined;
    merged[field] = sealUnlessMask(value, stored, `config.${field}`);
  }
  return merged;
}

/** The settings as any answer shows them: each secret as `••••` and its last four characters. */
export function maskedConfig(type: ProviderType, stored: Config): Config {
  const out = { ...stored };
  for (const field of PROVIDER_KINDS[type].secretFields)
    if (isSealed(out[field])) out[field] = maskSecret(open(out[field] as string));
  return out;
}

/** The settings as the sender uses them: secrets opened. */
export function openedConfig(type: ProviderType, stored: Config): Config {
  const out = { ...stored };
  for (const field of PROVIDER_KINDS[type].secretFields)
    if (isSealed(out[field])) out[field] = open(out[field] as string);
  return out;
}
