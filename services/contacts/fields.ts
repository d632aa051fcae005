import { isDeepStrictEqual } from "node:util";
import { Type, type TOptional, type TSchema, type TUnsafe } from "@sinclair/typebox";
import { Nullable } from "../../lib/schema";

/**
 * The contact's fields, defined once: API name, column, kind (how a value is
 * checked, normalised and stored) and, for text, its longest length. The
 * row and view types, the view mapping, the write normaliser's field lists,
 * the upsert's columns, the CSV columns, the params schemas and the segment
 * filter's whitelist all derive from this table. The order is the CSV order.
 * `score` is read-only (scoring owns it).
 */
export const CONTACT_FIELDS = {
  email: { column: "email", kind: "email", maxLength: 254 },
  phone: { column: "phone", kind: "phone", maxLength: 50 },
  firstName: { column: "first_name", kind: "text", maxLength: 255 },
  lastName: { column: "last_name", kind: "text", maxLength: 255 },
  externalId: { column: "external_id", kind: "text", maxLength: 255 },
  locale: { column: "locale", kind: "locale", maxLength: 35 },
  timezone: { column: "timezone", kind: "timezone", maxLength: 64 },
  country: { column: "country", kind: "text", maxLength: 255 },
  city: { column: "city", kind: "text", maxLength: 255 },
  tags: { column: "tags", kind: "tags", maxLength: 100 },
  stage: { column: "stage", kind: "text", maxLength: 100 },
  score: { column: "score", kind: "score", maxLength: 0 },
  companyId: { column: "company_id", kind: "text", maxLength: 255 },
  ownerId: { column: "owner_id", kind: "text", maxLength: 255 },
  attributes: { column: "attributes", kind: "json", maxLength: 100 },
  customFields: { column: "custom_fields", kind: "json", maxLength: 100 },
} as const;

type Fields = typeof CONTACT_FIELDS;
export type ContactField = keyof Fields;
type Kind = Fields[ContactField]["kind"];
/** The fields a write may set (all but the read-only score). */
export type WritableField = Exclude<ContactField, "score">;
type KindOf<K extends ContactField> = Fields[K]["kind"];

/** A field's stored (and answered) value, by kind. */
type StoredValue<K extends Kind> = K extends "tags"
  ? string[]
  : K extends "json"
    ? Record<string, unknown>
    : K extends "score"
      ? number
      : string | null;

/** The field values a contact answers with, by API name. */
export type ContactValues = { [K in ContactField]: StoredValue<KindOf<K>> };
/** The same values as the `contacts` row holds them, by column. */
export type ContactColumns = { [K in ContactField as Fields[K]["column"]]: StoredValue<KindOf<K>> };
/** Writable fields in stored form; an absent key is left untouched by an update. */
export type ContactWrite = { [K in WritableField]?: StoredValue<KindOf<K>> };
/** Writable fields as a client sent them, checked by normalize.ts. */
export type ContactInput = {
  [K in WritableField]?: KindOf<K> extends "tags" | "json" ? unknown : string | null;
};

const entries = Object.entries(CONTACT_FIELDS) as Array<[ContactField, Fields[ContactField]]>;
const writable = entries.filter(([name]) => name !== "score") as Array<
  [WritableField, Fields[WritableField]]
>;

/** Column of each writable field. */
export const COLUMNS = Object.fromEntries(writable.map(([name, f]) => [name, f.column])) as {
  [K in WritableField]: Fields[K]["column"];
};
type FieldsOf<T extends Kind> = { [K in WritableField]: KindOf<K> extends T ? K : never }[WritableField];
/** The writable fields of one kind. */
export const fieldsOfKind = <T extends Kind>(kind: T) =>
  writable.filter(([, f]) => f.kind === kind).map(([name]) => name) as FieldsOf<T>[];
/** The fields a CSV cell holds as it is (all but the JSON objects, which spread into `<field>.<key>` columns), in CSV order. */
export const CSV_FIELDS = entries.filter(([, f]) => f.kind !== "json").map(([name]) => name);
/** The writable ones, which an import reads. */
export const CSV_WRITABLE_FIELDS = writable
  .filter(([, f]) => f.kind !== "json")
  .map(([name]) => name) as Array<Exclude<WritableField, FieldsOf<"json">>>;

/** The columns of the writable scalar fields (text of any kind), in table order. */
export const SCALAR_COLUMNS = writable
  .filter(([, f]) => f.kind !== "tags" && f.kind !== "json")
  .map(([, f]) => f.column);

/** A writable field's column with its SQL type, for `jsonb_to_recordset(...) AS r(<these>)`. */
export const RECORD_COLUMN_TYPES = writable
  .map(([, f]) => `${f.column} ${f.kind === "tags" ? "text[]" : f.kind === "json" ? "jsonb" : "text"}`)
  .join(", ");

/** A write as the upsert's JSON record of columns: absent scalars null, absent lists and objects empty. */
export function recordOf(
  write: ContactWrite,
  stripNulls: (o: Record<string, unknown> | undefined) => Record<string, unknown>,
): { [K in WritableField as Fields[K]["column"]]: StoredValue<KindOf<K>> } {
  const record: Record<string, unknown> = {};
  for (const [name, f] of writable) {
    const value = write[name];
    record[f.column] =
      f.kind === "tags"
        ? (value ?? [])
        : f.kind === "json"
          ? stripNulls(value as Record<string, unknown> | undefined)
          : (value ?? null);
  }
  return record as { [K in WritableField as Fields[K]["column"]]: StoredValue<KindOf<K>> };
}

/** A `contacts` row's values by API name. */
export function valuesOf(row: ContactColumns): ContactValues {
  const values: Record<string, unknown> = {};
  for (const [name, f] of entries) {
    const stored = (row as Record<string, unknown>)[f.column];
    values[name] = f.kind === "tags" ? (stored ?? []) : f.kind === "json" ? (stored ?? {}) : stored;
  }
  return values as ContactValues;
}

/**
 * The fields a write changed, by API name, comparing the row before and
 * after it (by column, as the database answers them): a JSON object's
 * fields as `customFields.<key>`, consent as `consent.<channel>` when its
 * status changed. The `contact.updated` fact names them (lib/domain-events.ts).
 */
export function changedFields(before: Record<string, unknown>, after: Record<string, unknown>): string[] {
  const changed: string[] = [];
  const same = (a: unknown, b: unknown) => isDeepStrictEqual(a ?? null, b ?? null);
  const objectOf = (v: unknown) => (v ?? {}) as Record<string, unknown>;
  for (const [name, f] of entries) {
    const was = before[f.column];
    const is = after[f.column];
    if (f.kind !== "json") {
      if (!same(f.kind === "score" ? Number(was) : was, f.kind === "score" ? Number(is) : is))
        changed.push(name);
      continue;
    }
    const [a, b] = [objectOf(was), objectOf(is)];
    for (const key of new Set([...Object.keys(a), ...Object.keys(b)]))
      if (!same(a[key], b[key])) changed.push(`${name}.${key}`);
  }
  const [a, b] = [objectOf(before.consent), objectOf(after.consent)];
  for (const channel of new Set([...Object.keys(a), ...Object.keys(b)])) {
    const status = (entry: unknown) => (entry as { status?: string } | undefined)?.status ?? null;
    if (status(a[channel]) !== status(b[channel])) changed.push(`consent.${channel}`);
  }
  return changed;
}

/** One writable field's params schema: nullable text of its length, a tag list, or a JSON object. */
type FieldSchema<K extends WritableField> = TOptional<
  TUnsafe<
    KindOf<K> extends "tags"
      ? string[] | null
      : KindOf<K> extends "json"
        ? Record<string, unknown> | null
        : string | null
  >
>;

function fieldSchema(kind: Kind, maxLength: number): TSchema {
  if (kind === "tags") return Nullable(Type.Array(Type.String({ maxLength }), { maxItems: 200 }));
  if (kind === "json") {
    return Nullable(
      Type.Record(Type.String(), Type.Unknown(), {
        description:
          "Merged key by key on update (null removes a key); keys up to 100 characters, without dots",
      }),
    );
  }
  return Nullable(Type.String({ maxLength }));
}

/** The params schemas of the writable fields (create, update, ingest). */
export const writableFieldSchemas = Object.fromEntries(
  writable.map(([name, f]) => [name, Type.Optional(fieldSchema(f.kind, f.maxLength))]),
) as { [K in WritableField]: FieldSchema<K> };

/** The segment filter's type of each field: how conditions on it compare. */
export const FILTER_TYPES: Record<Kind, "text" | "email" | "tags" | "number" | "json"> = {
  email: "email",
  phone: "text",
  text: "text",
  locale: "text",
  timezone: "text",
  tags: "tags",
  score: "number",
  json: "json",
};

/** One field's schema in an answer: text or null, a tag list, a JSON object, or the score. */
function answerSchema(kind: Kind): TSchema {
  if (kind === "tags") return Type.Array(Type.String());
  if (kind === "json") return Type.Record(Type.String(), Type.Unknown());
  if (kind === "score") return Type.Number();
  return Nullable(Type.String(kind === "phone" ? { description: "E.164" } : {}));
}

/** The answer schemas of every field (the Contact component). */
export const answerFieldSchemas = Object.fromEntries(
  entries.map(([name, f]) => [name, answerSchema(f.kind)]),
) as {
  [K in ContactField]: TUnsafe<StoredValue<KindOf<K>>>;
};
