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
import type { WorkspaceId } from "./workspace-id";

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
/**
 * A workspace id in params: a path's, checked by the Authorize middleware
 * before the handler runs, or an internal call's, which carries its caller's
 * scope. Typed `WorkspaceId`, so it scopes queries as `workspaceOf` does.
 */
export const WorkspaceIdParam = Type.Unsafe<WorkspaceId>(Type.String({ minLength: 1, maxLength: 64 }));

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

/** `["attributes", "plan"]` → `attributes.plan`, `["tags", "0"]` → `tags[0]`. */
const fieldName = (path: string[]) =>
  path.reduce(
    (field, part) => (/^\d+$/.test(part) ? `${field}[${part}]` : field ? `${field}.${part}` : part),
    "",
  );

/** `/attributes/plan` → `attributes.plan`, `/tags/0` → `tags[0]`; a missing or unknown property names itself. */
function fieldOf(error: ErrorObject): string {
  const path = error.instancePath
    .split("/")
    .slice(1)
    .map((part) => part.replace(/~1/g, "/").replace(/~0/g, "~"));
  if (error.keyword === "required") path.push(String(error.params.missingProperty));
  if (error.keyword === "additionalProperties") path.push(String(error.params.additionalProperty));
  return fieldName(path);
}

/** Issues one refusal names at most: enough to correct a request, few enough that a refusal stays small. */
export const MAX_ISSUES = 20;

/**
 * Ajv's errors as the contract's details (each with its failing keyword as
 * `type`); a union's failed branches are folded into one line per field, and
 * no more than MAX_ISSUES are kept.
 */
function keywordIssues(errors: ErrorObject[] | null | undefined): Array<FieldIssue & { type: string }> {
  const seen = new Set<string>();
  const issues: Array<FieldIssue & { type: string }> = [];
  for (const error of errors ?? []) {
    if (issues.length === MAX_ISSUES) break;
    const message = error.keyword === "additionalProperties" ? "is not a known field" : error.message;
    const issue = { field: fieldOf(error), message: message ?? "is invalid", type: error.keyword };
    const key = `${issue.field}\u0000${issue.message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    issues.push(issue);
  }
  return issues;
}

/** Ajv's errors as the contract's details, at most MAX_ISSUES of them. */
export function fieldIssues(errors: ErrorObject[] | null | undefined): FieldIssue[] {
  return keywordIssues(errors).map(({ field, message }) => ({ field, message }));
}

/**
 * Keys an object may hold where its schema sets no maxProperties: free keys
 * (attributes, metadata, variables) are each validated, and a closed
 * object's undeclared keys each removed, so neither may come by the
 * hundred thousand.
 */
export const MAX_OBJECT_KEYS = 1_000;

type SchemaNode = Record<string, unknown>;
type SizeIssue = FieldIssue & { type: "maxItems" | "maxProperties" };

const typesOf = (node: SchemaNode): unknown[] =>
  Array.isArray(node.type) ? node.type : node.type === undefined ? [] : [node.type];

/** Whether a schema node (no `type` admits anything) may be a list or an object. */
function admits(node: SchemaNode, kind: "array" | "object"): boolean {
  const types = typesOf(node);
  return types.length === 0 || types.includes(kind);
}

/**
 * The first list in `value` longer than its schema's maxItems, or object
 * with more keys than its maxProperties (or `keyLimit`), found before
 * any item is validated: Ajv with `allErrors` (which ajv-errors needs) checks
 * every item, and ajv-errors scans all errors so far for each of its
 * messages, so 100,000 invalid items held the event loop for minutes. A
 * union holds the value when one of its branches' limits does.
 */
export function oversizedInput(
  schema: unknown,
  value: unknown,
  path: string[] = [],
  keyLimit = MAX_OBJECT_KEYS,
): SizeIssue | null {
  if (typeof schema !== "object" || schema === null || typeof value !== "object" || value === null)
    return null;
  const node = schema as SchemaNode;
  for (const part of (node.allOf as unknown[] | undefined) ?? []) {
    const issue = oversizedInput(part, value, path, keyLimit);
    if (issue) return issue;
  }
  const branches = (node.anyOf ?? node.oneOf) as SchemaNode[] | undefined;
  if (branches) {
    const kind = Array.isArray(value) ? "array" : "object";
    const issues = branches
      .filter((branch) => admits(branch, kind))
      .map((branch) => oversizedInput(branch, value, path, keyLimit));
    if (issues.length === 0 || issues.some((issue) => issue === null)) return null;
    return issues[0];
  }
  if (Array.isArray(value)) return oversizedList(node, value, path, keyLimit);
  return oversizedObject(node, value as Record<string, unknown>, path, keyLimit);
}

function oversizedList(
  node: SchemaNode,
  value: unknown[],
  path: string[],
  keyLimit: number,
): SizeIssue | null {
  if (!admits(node, "array")) return null;
  if (typeof node.maxItems === "number" && value.length > node.maxItems)
    return { field: fieldName(path), message: `must have at most ${node.maxItems} items`, type: "maxItems" };
  if (typeof node.items !== "object" || node.items === null) return null;
  for (const [i, item] of value.entries()) {
    const issue = oversizedInput(node.items, item, [...path, String(i)], keyLimit);
    if (issue) return issue;
  }
  return null;
}

function oversizedObject(
  node: SchemaNode,
  value: Record<string, unknown>,
  path: string[],
  keyLimit: number,
): SizeIssue | null {
  if (!admits(node, "object") || typesOf(node).length === 0) return null;
  const max = typeof node.maxProperties === "number" ? node.maxProperties : keyLimit;
  const keys = Object.keys(value);
  if (keys.length > max)
    return { field: fieldName(path), message: `must have at most ${max} keys`, type: "maxProperties" };
  const properties = (node.properties ?? {}) as Record<string, unknown>;
  for (const [key, sub] of Object.entries(properties)) {
    const issue = Object.hasOwn(value, key)
      ? oversizedInput(sub, value[key], [...path, key], keyLimit)
      : null;
    if (issue) return issue;
  }
  const patterns = Object.entries((node.patternProperties ?? {}) as Record<string, unknown>).map(
    ([pattern, sub]) => [new RegExp(pattern, "u"), sub] as const,
  );
  const additional = typeof node.additionalProperties === "object" ? node.additionalProperties : undefined;
  if (!patterns.length && !additional) return null;
  for (const key of keys) {
    if (Object.hasOwn(properties, key)) continue;
    const sub = patterns.find(([pattern]) => pattern.test(key))?.[1] ?? additional;
    const issue = oversizedInput(sub, value[key], [...path, key], keyLimit);
    if (issue) return issue;
  }
  return null;
}

/** A list or a plain object (what JSON parses to); streams, dates and buffers are not looked into. */
function isPlain(value: unknown): value is object {
  if (typeof value !== "object" || value === null) return false;
  const prototype = Object.getPrototypeOf(value);
  return Array.isArray(value) || prototype === Object.prototype || prototype === null;
}

/** The first number in `value` that JSON cannot carry and no column holds (`1e400` reads as Infinity). */
export function nonFiniteNumber(value: unknown, path: string[] = []): FieldIssue | null {
  if (typeof value === "number")
    return Number.isFinite(value) ? null : { field: fieldName(path), message: "must be a finite number" };
  if (!isPlain(value)) return null;
  for (const key of Object.keys(value)) {
    path.push(key);
    const issue = nonFiniteNumber((value as Record<string, unknown>)[key], path);
    path.pop();
    if (issue) return issue;
  }
  return null;
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
export function compileParamsChecker(
  schema: TSchema,
  options: { rawBody?: boolean; internal?: boolean } = {},
): Checker {
  // An action that reads its raw body (a provider's callbacks) may get a list of events, which the
  // gateway merges into the params as one key per item: its top level keeps no count of keys.
  const sized = options.rawBody ? { ...schema, maxProperties: Number.MAX_SAFE_INTEGER } : schema;
  // An internal action's params come from a service that checked its own request: only declared limits hold.
  const keyLimit = options.internal ? Infinity : MAX_OBJECT_KEYS;
  const validate = paramsAjv.compile(schema);
  const scalars = scalarAjv.compile(schema);
  const lists = listAjv.compile(schema);
  const finite: Checker = (value) => {
    const issue = nonFiniteNumber(value);
    return issue ? [{ ...issue, type: "finite" }] : true;
  };
  return (value, typed = false) => {
    const oversized = oversizedInput(sized, value, [], keyLimit);
    if (oversized) return [oversized];
    if (validate(value)) return finite(value);
    const readable = (error: ErrorObject) =>
      error.keyword === "type" &&
      String(error.params.type)
        .split(",")
        .every((t) => READ_FROM_TEXT.has(t));
    const faults = (validate.errors ?? []).filter((error) => !readable(error));
    if (faults.length === 0) {
      const coerce = typed ? scalars : lists;
      if (coerce(value)) return finite(value);
      faults.push(...(coerce.errors ?? []));
    }
    return keywordIssues(faults);
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
  if (!isPlain(value)) return null;
  if (path.length >= MAX_NESTING)
    return { field: path.join("."), message: `must not nest deeper than ${MAX_NESTING} levels` };
  // One path, grown and shrunk in place: a body of 100,000 keys is walked without a copy per key.
  for (const key of Object.keys(value)) {
    path.push(key);
    const issue = unstorableText(key)
      ? { field: path.join("."), message: "must not have a key with NUL characters or unpaired surrogates" }
      : unstorableInput((value as Record<string, unknown>)[key], path);
    path.pop();
    if (issue) return issue;
  }
  return null;
}
