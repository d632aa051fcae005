import { Type } from "@sinclair/typebox";
import { fieldError } from "../../lib/errors";
import { isSealed, maskSecret, open, sealUnlessMask } from "../../lib/secret-box";
import { Int32, Nullable, StringEnum } from "../../lib/schema";
import { CHANNELS } from "../../lib/channels";
import { RetentionSetting } from "../../lib/retention";
import { normalizeLocale, normalizeTimezone } from "../contacts/normalize";

/**
 * Workspace settings (contract-messaging 13): each top-level key is merged
 * on PATCH, checked here (400 naming `settings.<key>`), and `null` turns a
 * feature off. Secrets among them are sealed at rest and masked in reads.
 */

const Clock = Type.String({
  pattern: "^([01]\\d|2[0-3]):[0-5]\\d$",
  errorMessage: "must be a time as HH:MM",
});
const HttpUrl = Type.String({ format: "uri", pattern: "^https?://", maxLength: 2048 });
const Channel = StringEnum(CHANNELS);

export const SettingsSchema = Type.Object(
  {
    timezone: Type.Optional(Type.String({ maxLength: 64, description: "IANA zone (`UTC`)" })),
    defaultLocale: Type.Optional(Type.String({ maxLength: 35, description: "BCP 47 (`en`)" })),
    quietHours: Type.Optional(
      Nullable(
        Type.Object(
          { start: Clock, end: Clock },
          {
            additionalProperties: false,
            description: "No sends between start and end in the contact's zone",
          },
        ),
      ),
    ),
    frequencyCap: Type.Optional(
      Nullable(
        Type.Object(
          {
            count: Int32({ minimum: 1, maximum: 10_000 }),
            periodHours: Int32({ minimum: 1, maximum: 8760 }),
            channels: Type.Optional(
              Nullable(Type.Array(Channel, { uniqueItems: true, maxItems: CHANNELS.length })),
            ),
          },
          { additionalProperties: false, description: "Non-transactional sends per contact and period" },
        ),
      ),
    ),
    topics: Type.Optional(
      Nullable(
        Type.Array(
          Type.Object(
            {
              key: Type.String({
                pattern: "^[A-Za-z0-9_-]{1,64}$",
                errorMessage: "must be 1-64 letters, digits, _ or -",
              }),
              name: Type.String({ minLength: 1, maxLength: 200 }),
              description: Type.Optional(Nullable(Type.String({ maxLength: 1000 }))),
            },
            { additionalProperties: false },
          ),
          { maxItems: 100 },
        ),
      ),
    ),
    allowedOrigins: Type.Optional(
      Nullable(
        Type.Array(
          Type.String({
            pattern: "^https?://[^/?#]+$",
            errorMessage: "must be an origin such as https://example.com",
          }),
          { maxItems: 100 },
        ),
      ),
    ),
    sender: Type.Optional(
      Nullable(
        Type.Object(
          {
            fromName: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
            fromEmail: Type.Optional(Nullable(Type.String({ format: "email", maxLength: 254 }))),
            replyTo: Type.Optional(Nullable(Type.String({ format: "email", maxLength: 254 }))),
          },
          { additionalProperties: false },
        ),
      ),
    ),
    tracking: Type.Optional(
      Nullable(
        Type.Object(
          { opens: Type.Optional(Type.Boolean()), clicks: Type.Optional(Type.Boolean()) },
          { additionalProperties: false },
        ),
      ),
    ),
    translation: Type.Optional(
      Nullable(
        Type.Object(
          {
            baseUrl: HttpUrl,
            apiKey: Type.Optional(
              Nullable(Type.String({ maxLength: 512, description: "Secret: answered masked" })),
            ),
          },
          { additionalProperties: false, description: "A LibreTranslate-compatible API" },
        ),
      ),
    ),
    externaltool: Type.Optional(
      Nullable(
        Type.Object(
          {
            baseUrl: HttpUrl,
            apiKey: Type.String({ minLength: 1, maxLength: 512, description: "Secret: answered masked" }),
            listId: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 100 }))),
          },
          {
            additionalProperties: false,
            description:
              "The external marketing tool (Mailchimp Marketing API v3 wire): its API root, key and default list",
          },
        ),
      ),
    ),
    chatapp1: Type.Optional(
      Nullable(Type.Object({ botUrl: Type.Optional(Nullable(HttpUrl)) }, { additionalProperties: false })),
    ),
    confirmRedirectUrl: Type.Optional(Nullable(HttpUrl)),
    retention: Type.Optional(Nullable(RetentionSetting)),
  },
  {
    additionalProperties: true,
    description:
      "Workspace settings, merged per top-level key on update; keys the API does not know are kept as sent",
  },
);

type Settings = Record<string, unknown>;

/** What JSON Schema cannot say: the zone and locale must be real ones. Answers the settings normalised. */
export function checkSettings(settings: Settings): Settings {
  const out = { ...settings };
  if (out.timezone !== undefined) {
    const zone = typeof out.timezone === "string" ? normalizeTimezone(out.timezone) : null;
    if (!zone) throw fieldError("settings.timezone", "must be an IANA time zone (e.g. Europe/Paris)");
    out.timezone = zone;
  }
  if (out.defaultLocale !== undefined) {
    const locale = typeof out.defaultLocale === "string" ? normalizeLocale(out.defaultLocale) : null;
    if (!locale) throw fieldError("settings.defaultLocale", "must be a BCP 47 locale (e.g. en, pt-BR)");
    out.defaultLocale = locale;
  }
  return out;
}

/** Settings keys holding a secret, and the secret's field inside (sealed at rest, masked in reads). */
const SECRET_SETTINGS = [
  ["translation", "apiKey"],
  ["externaltool", "apiKey"],
] as const;

type Section = Record<string, unknown> | null | undefined;

/** `settings` with each present secret passed through `change` (the others as they are). */
function eachSecret(
  settings: Settings,
  change: (value: string, key: string, field: string) => string | undefined,
): Settings {
  let out = settings;
  for (const [key, field] of SECRET_SETTINGS) {
    const section = settings[key] as Section;
    const value = section?.[field];
    if (typeof value !== "string" || !value) continue;
    const changed = change(value, key, field);
    if (changed !== undefined) out = { ...out, [key]: { ...section, [field]: changed } };
  }
  return out;
}

/** The changes as stored: each secret (the translation and external tool API keys) sealed, or kept when the mask comes back. */
export function sealSecrets(changes: Settings, current: Settings): Settings {
  return eachSecret(changes, (value, key, field) => {
    const stored = (current[key] as Section)?.[field];
    return sealUnlessMask(value, typeof stored === "string" ? stored : null, `settings.${key}.${field}`);
  });
}

/** Settings as any reader sees them: secrets masked. */
export function maskSecrets(settings: Settings): Settings {
  return eachSecret(settings, (value) => (isSealed(value) ? maskSecret(open(value)) : undefined));
}

/** Settings as the service that uses a secret needs them: opened. */
export function openSecrets(settings: Settings): Settings {
  return eachSecret(settings, (value) => (isSealed(value) ? open(value) : undefined));
}
