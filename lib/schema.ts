import Ajv, { type ErrorObject } from "ajv";
import addErrors from "ajv-errors";
import addFormats from "ajv-formats";
import addKeywords from "ajv-keywords";
import {
  Kind,
  Type,
  type ObjectOptions,
  type SchemaOptions,
  type Static,
  type TObject,
  type TProperties,
  type TSchema,
  type TUnsafe,
} from "@sinclair/typebox";
import type { FieldIssue } from "./errors";

/**
 * TypeBox schemas validated by Ajv: one schema object per action gives the
 * runtime check, the handler's types (`Static<typeof schema>`) and the
 * OpenAPI description of params and result.
 */

/**
 * Params: defaults filled, `transform: ["trim"]` applied, undeclared fields
 * removed; types as sent. A schema's `errorMessage` (ajv-errors) says in
 * words what a pattern means ("must be an ISO 4217 code such as USD").
 */
const paramsAjv = addErrors(
  addKeywords(
    addFormats(new Ajv({ allErrors: true, removeAdditional: true, useDefaults: true, strict: false })),
    ["transform"],
  ),
);

/** The same, reading text as the numbers and booleans a schema asks for, and (query strings, forms) one value as a list. */
const coercing = (coerceTypes: true | "array") =>
  addErrors(
    addKeywords(
      addFormats(
        new Ajv({ allErrors: true, removeAdditional: true, useDefaults: true, coerceTypes, strict: false }),
      ),
      ["transform"],
    ),
  );
const scalarAjv = coercing(true);
const listAjv = coercing("array");

/** Types text may be read as; a number or boolean where text is expected is refused, never turned into text. */
const READ_FROM_TEXT = new Set(["number", "integer", "boolean", "array", "null"]);

/** Results are checked as they are: no coercion, nothing removed. */
const resultAjv = addFormats(new Ajv({ allErrors: true, strict: false }));

/** An action's params: a closed object, so `workspaceId`, `id` or `role` that it does not declare never reach a handler. */
export const Params = <T extends TProperties>(properties: T, options: ObjectOptions = {}): TObject<T> =>
  Type.Object(properties, { additionalProperties: false, ...options });

/** A shape that recurs (a contact, a page, an event): a named OpenAPI component wherever it appears. */
export const Component = <T extends TSchema>(name: string, schema: T): T =>
  ({ ...schema, [COMPONENT_KEY]: name }) as T;
export const COMPONENT_KEY = "x-component";

/** An integer that fits PostgreSQL's `integer` column. */
export const Int32 = (options: SchemaOptions & { minimum?: number; maximum?: number } = {}) =>
  Type.Integer({ minimum: -2_147_483_648, maximum: 2_147_483_647, ...options });

/**
 * A moment, answered as an ISO 8601 string. Typed `Date | string` for the
 * handler, since repos hand back the driver's Date and JSON makes it a string.
 */
export const DateTime = (options: SchemaOptions = {}) =>
  Type.Unsafe<Date | string>({ type: "string", format: "date-time", ...options });

/** One of a list of strings: a JSON Schema `enum`, so a wrong value is one error naming the field, not one per choice. */
export const StringEnum = <const T extends readonly string[]>(values: T, options: SchemaOptions = {}) =>
  Type.Unsafe<T[number]>({ type: "string", enum: [...values], ...options });

/** A trimmed string (leading and trailing white space removed before the length checks). */
export const Trimmed = (options: SchemaOptions & { minLength?: number; maxLength?: number } = {}) =>
  Type.String({ ...options, transform: ["trim"] });

/**
 * `T | null`, as columns that may be empty answer. Written as a type list
 * (`["string", "null"]`) rather than `anyOf`: with coercion on, Ajv would
 * turn a null into "" in a string branch of an `anyOf`.
 */
export function Nullable<T extends TSchema>(schema: T): TUnsafe<Static<T> | null> {
  const { type, enum: values } = schema as { type?: unknown; enum?: unknown };
  // An enum must list null too, or the type list alone would not let it through.
  const listed = Array.isArray(values) ? { enum: [...values, null] } : {};
  if (typeof type === "string")
    return Type.Unsafe<Static<T> | null>({ ...schema, type: [type, "null"], ...listed });
  return Type.Unsafe<Static<T> | null>({ anyOf: [schema, { type: "null" }] });
}

/** Whether `schema` is a JSON Schema (TypeBox) rather than a fastest-validator rule set; survives a NATS hop, which drops TypeBox's symbols. */
export function isJsonSchema(schema: unknown): schema is TSchema {
  if (typeof schema !== "object" || schema === null) return false;
  if (Kind in schema) return true;
  const candidate = schema as Record<string, unknown>;
  return (
    candidate.type === "object" && typeof candidate.properties === "object" && !("$$strict" in candidate)
  );
}

/** `/attributes/plan` → `attributes.plan`, `/tags/0` → `tags[0]`; a missing or unknown property names itself. */
function fieldOf(error: ErrorObject): string {
  const path = error.instancePath
    .split("/")
    .slice(1)
    .map((part) => part.replace(/~1/g, "/").replace(/~0/g, "~"));
  if (error.keyword === "required") path.push(String(error.params.missingProperty));
  if (error.keyword === "additionalProperties") path.push(String(error.params.additionalProperty));
  return path.reduce(
    (field, part) => (/^\d+$/.test(part) ? `${field}[${part}]` : field ? `${field}.${part}` : part),
    "",
  );
}

/** Ajv's errors as the contract's details; a union's failed branches are folded into one line per field. */
export function fieldIssues(errors: ErrorObject[] | null | undefined): FieldIssue[] {
  const seen = new Set<string>();
  const issues: FieldIssue[] = [];
  for (const error of errors ?? []) {
    const message = error.keyword === "additionalProperties" ? "is not a known field" : error.message;
    const issue = { field: fieldOf(error), message: message ?? "is invalid" };
    const key = `${issue.field}\u0000${issue.message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    issues.push(issue);
  }
  return issues;
}

/**
 * Moleculer's validator contract: `true`, or the issues (each with the failing keyword as `type`).
 * `typed`: the params came as JSON, where a list must be a list (a query string or a form repeats a key instead).
 */
export type Checker = (value: unknown, typed?: boolean) => true | Array<FieldIssue & { type: string }>;

/**
 * Params as sent first; when the only faults are text where a number,
 * boolean or list is expected (a query string, a form), read that text as
 * the schema asks. Ajv's own coercion would also turn `42` into `"42"`.
 */
export function compileParamsChecker(schema: TSchema): Checker {
  const validate = paramsAjv.compile(schema);
  const scalars = scalarAjv.compile(schema);
  const lists = listAjv.compile(schema);
  return (value, typed = false) => {
    if (validate(value)) return true;
    const readable = (error: ErrorObject) =>
      error.keyword === "type" &&
      String(error.params.type)
        .split(",")
        .every((t) => READ_FROM_TEXT.has(t));
    const faults = (validate.errors ?? []).filter((error) => !readable(error));
    if (faults.length === 0) {
      const coerce = typed ? scalars : lists;
      if (coerce(value)) return true;
      faults.push(...(coerce.errors ?? []));
    }
    return faults.map((error) => ({ ...fieldIssues([error])[0], type: error.keyword }));
  };
}

const resultValidators = new WeakMap<object, ReturnType<typeof resultAjv.compile>>();

/** What in `value` does not match `schema` (empty when it matches). */
export function schemaIssues(schema: Record<string, unknown>, value: unknown): FieldIssue[] {
  let validate = resultValidators.get(schema);
  if (!validate) {
    validate = resultAjv.compile(schema);
    resultValidators.set(schema, validate);
  }
  return validate(value) ? [] : fieldIssues(validate.errors);
}

/** Deeper than this, a body is refused: no field we store nests so far, and PostgreSQL's jsonb parser has a stack limit. */
export const MAX_NESTING = 32;

/** PostgreSQL's text refuses NUL, its jsonb an unpaired surrogate's escape. */
const unstorableText = (text: string) => text.includes("\u0000") || !text.isWellFormed();

/**
 * The first place in a request's params that PostgreSQL could not store:
 * a NUL character or an unpaired surrogate in any string or object key (text
 * and jsonb refuse both), or nesting deeper than MAX_NESTING. Streams and
 * other non-plain values are not looked into.
 */
export function unstorableInput(value: unknown, path: string[] = []): FieldIssue | null {
  if (typeof value === "string") {
    return unstorableText(value)
      ? { field: path.join("."), message: "must not contain NUL characters or unpaired surrogates" }
      : null;
  }
  if (typeof value !== "object" || value === null) return null;
  const plain =
    Array.isArray(value) ||
    Object.getPrototypeOf(value) === Object.prototype ||
    Object.getPrototypeOf(value) === null;
  if (!plain) return null;
  if (path.length >= MAX_NESTING)
    return { field: path.join("."), message: `must not nest deeper than ${MAX_NESTING} levels` };
  for (const [key, item] of Object.entries(value)) {
    const at = [...path, key];
    if (unstorableText(key)) {
      return {
        field: at.join("."),
        message: "must not have a key with NUL characters or unpaired surrogates",
      };
    }
    const issue = unstorableInput(item, at);
    if (issue) return issue;
  }
  return null;
}
