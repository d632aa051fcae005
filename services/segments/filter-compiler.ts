import { Binds, likeEscape } from "../../lib/database";
import {
  resolveField,
  type Condition,
  type EventCondition,
  type FieldCondition,
  type FieldScope,
  type FilterGroup,
  type ResolvedField,
  type SegmentCondition,
} from "./filter-schema";

/**
 * Compiles a validated filter into ONE SQL predicate over `contacts c`.
 * Values only ever travel as bind parameters (`$n`); identifiers come only
 * from the whitelist in filter-schema.ts. Two shapes of the same meaning:
 * - `row`: behaviour and membership as correlated subqueries, cheap for one
 *   contact (incremental evaluation); a boolean, never NULL;
 * - `set`: a WHERE condition for the whole workspace (full recompute,
 *   preview, audiences), NULL where `row` says false. The conditions AND-ed
 *   into the WHERE (through `all` groups from the top) become joins the
 *   planner hashes: semi-joins (`c.id IN (...)`) and anti-joins
 *   (`NOT EXISTS (...)`). Under an `any` group each set is a subplan hashed
 *   once and probed per contact, one OR over one scan of the contacts: at
 *   1 M contacts x 10 M events that answered the bench's any-group in 8 s
 *   where a UNION of the branches' id sets (deduplicated, then joined back
 *   to the contacts) took 14 s (bench/HISTORY.md).
 * In a WHERE a NULL excludes the row as `false` does, and only leaves are
 * ever negated (a negated set is never NULL), so set mode needs no COALESCE.
 * Tests check that both shapes agree.
 */
export type CompileMode = "row" | "set";

export interface CompileOptions {
  mode: CompileMode;
  /** Placeholder of the workspace id (set mode scopes the event scan by it). */
  workspaceParam: string;
}

const jsonText = (v: unknown) => JSON.stringify(v);

function isGroup(c: Condition): c is FilterGroup {
  return "conditions" in c;
}

/** The predicate of a whole filter (see the two shapes above). */
export function compileFilter(filter: FilterGroup, binds: Binds, options: CompileOptions): string {
  if (options.mode === "set") return setGroup(filter, binds, options.workspaceParam, true);
  return `COALESCE(${rowGroup(filter, binds)}, false)`;
}

function rowGroup(group: FilterGroup, binds: Binds): string {
  if (group.conditions.length === 0) return group.match === "all" ? "true" : "false";
  const parts = group.conditions.map((c) => rowCondition(c, binds));
  return `(${parts.join(group.match === "all" ? " AND " : " OR ")})`;
}

function rowCondition(c: Condition, binds: Binds): string {
  if (isGroup(c)) return rowGroup(c, binds);
  if ("event" in c) return rowEvent(c, binds);
  if ("segment" in c) return rowSegment(c, binds);
  return compileField(c, binds, "contact");
}

function rowSegment(c: SegmentCondition, binds: Binds): string {
  const member = `EXISTS (SELECT 1 FROM segment_members sm WHERE sm.segment_id = ${binds.p(c.segment, "text")} AND sm.contact_id = c.id)`;
  return c.operator === "in" ? member : `NOT (${member})`;
}

/** An event condition's count rule as "count >= n", "count <= n" or "count = n". */
function countRule(c: EventCondition): { op: ">=" | "<=" | "="; n: number } {
  if (!c.count) return { op: ">=", n: 1 };
  if (c.count.gte !== undefined) return { op: ">=", n: c.count.gte };
  if (c.count.lte !== undefined) return { op: "<=", n: c.count.lte };
  return { op: "=", n: c.count.eq as number };
}

/** The event filters of a condition (type, window, `where`), AND-ed, over `events e`. */
function eventFilters(c: EventCondition, binds: Binds): string {
  const filters = [`e.type = ${binds.p(c.event, "text")}`];
  if (c.within) {
    filters.push(`e.timestamp >= now() - make_interval(days => ${binds.p(c.within.days, "int")})`);
  }
  for (const w of c.where ?? []) filters.push(compileField(w, binds, "event"));
  return filters.join(" AND ");
}

function rowEvent(c: EventCondition, binds: Binds): string {
  const { op, n } = countRule(c);
  // "At least 0 times" always holds; bind nothing (every bound value must be referenced).
  if (op === ">=" && n === 0) return c.operator === "performed" ? "true" : "false";
  const where = `e.contact_id = c.id AND ${eventFilters(c, binds)}`;
  const performed =
    op === ">=" && n === 1
      ? `EXISTS (SELECT 1 FROM events e WHERE ${where})`
      : `(SELECT count(*) FROM events e WHERE ${where}) ${op} ${binds.p(n, "int")}`;
  return c.operator === "performed" ? performed : `NOT (${performed})`;
}

function setGroup(group: FilterGroup, binds: Binds, ws: string, top: boolean): string {
  if (group.conditions.length === 0) return group.match === "all" ? "true" : "false";
  // Only the members of an `all` reached through `all`s stay AND-ed into the WHERE.
  const members = group.conditions.map((c) => setCondition(c, binds, ws, top && group.match === "all"));
  return `(${members.join(group.match === "all" ? " AND " : " OR ")})`;
}

function setCondition(c: Condition, binds: Binds, ws: string, top: boolean): string {
  if (isGroup(c)) return setGroup(c, binds, ws, top);
  if ("event" in c) return setEvent(c, binds, ws, top);
  if ("segment" in c) {
    const id = binds.p(c.segment, "text");
    const members = `SELECT sm.contact_id FROM segment_members sm WHERE sm.segment_id = ${id}`;
    return setMembership(members, c.operator === "in", top);
  }
  return compileField(c, binds, "contact");
}

/**
 * Contacts in (or not in) a set, `source` answering `contact_id`: a
 * semi-join, or an anti-join (`NOT EXISTS`; `NOT IN` the planner cannot turn
 * into a join) when AND-ed into the WHERE; under an OR, a subplan hashed
 * once and probed per contact.
 */
function setMembership(source: string, inSet: boolean, top: boolean): string {
  if (inSet) return `c.id IN (${source})`;
  return top
    ? `NOT EXISTS (SELECT 1 FROM (${source}) d WHERE d.contact_id = c.id)`
    : `NOT (c.id IN (${source}))`;
}

/** An event condition as membership of the contacts whose events decide it. */
function setEvent(c: EventCondition, binds: Binds, ws: string, top: boolean): string {
  const { op, n } = countRule(c);
  if (op === ">=" && n === 0) return c.operator === "performed" ? "true" : "false";
  const scan = `SELECT e.contact_id FROM events e WHERE e.workspace_id = ${ws} AND e.contact_id IS NOT NULL AND ${eventFilters(c, binds)}`;
  // The contacts with the events that decide, and whether having them means "performed".
  let source: string;
  let performedIfIn: boolean;
  if (op === ">=" && n === 1) [source, performedIfIn] = [scan, true];
  else if (op === ">=")
    [source, performedIfIn] = [`${scan} GROUP BY e.contact_id HAVING count(*) >= ${binds.p(n, "int")}`, true];
  else if (op === "<=")
    [source, performedIfIn] = [`${scan} GROUP BY e.contact_id HAVING count(*) > ${binds.p(n, "int")}`, false];
  else if (n === 0) [source, performedIfIn] = [scan, false];
  else
    [source, performedIfIn] = [`${scan} GROUP BY e.contact_id HAVING count(*) = ${binds.p(n, "int")}`, true];
  return setMembership(source, performedIfIn === (c.operator === "performed"), top);
}

/** A field condition over `c` (contact scope) or `e` (event scope). Exported for scoring rules. */
export function compileField(c: FieldCondition, binds: Binds, scope: FieldScope): string {
  const field = resolveField(c.field, scope);
  if (!field) throw new Error(`Unknown field '${c.field}' reached the compiler`);
  switch (field.kind) {
    case "consent":
      return consentPredicate(
        c,
        binds,
        `COALESCE(c.consent -> ${binds.p(field.channel, "text")} ->> 'status', 'unknown')`,
      );
    case "json":
      return jsonPredicate(c, binds, field);
    default:
      if (field.type === "number") return numberPredicate(c, binds, field.column);
      if (field.type === "date") return datePredicate(c, binds, field.column, "timestamptz");
      if (field.type === "tags") return tagsPredicate(c, binds, field.column);
      return textPredicate(c, binds, field.column, field.type === "email");
  }
}

function textPredicate(c: FieldCondition, binds: Binds, x: string, lowerValue: boolean): string {
  const v = (value: unknown) => (lowerValue && typeof value === "string" ? value.toLowerCase() : value);
  switch (c.operator) {
    case "eq":
      return `${x} = ${binds.p(v(c.value), "text")}`;
    case "neq":
      return `${x} IS DISTINCT FROM ${binds.p(v(c.value), "text")}`;
    case "contains":
      return `${x} ILIKE ${binds.p(`%${likeEscape(String(c.value))}%`, "text")}`;
    case "not_contains":
      return `(${x} IS NULL OR ${x} NOT ILIKE ${binds.p(`%${likeEscape(String(c.value))}%`, "text")})`;
    case "starts_with":
      return `${x} ILIKE ${binds.p(`${likeEscape(String(c.value))}%`, "text")}`;
    case "ends_with":
      return `${x} ILIKE ${binds.p(`%${likeEscape(String(c.value))}`, "text")}`;
    case "in":
      return `${x} = ANY(${binds.p((c.value as unknown[]).map(v), "text[]")})`;
    case "not_in":
      return `(${x} IS NULL OR NOT (${x} = ANY(${binds.p((c.value as unknown[]).map(v), "text[]")})))`;
    case "is_set":
      return `(${x} IS NOT NULL AND ${x} <> '')`;
    case "is_not_set":
      return `(${x} IS NULL OR ${x} = '')`;
    default:
      throw new Error(`Operator ${c.operator} reached the compiler for a text field`);
  }
}

function numberPredicate(c: FieldCondition, binds: Binds, x: string): string {
  const comparisons: Record<string, string> = { eq: "=", gt: ">", gte: ">=", lt: "<", lte: "<=" };
  if (comparisons[c.operator]) return `${x} ${comparisons[c.operator]} ${binds.p(c.value, "numeric")}`;
  switch (c.operator) {
    case "neq":
      return `${x} IS DISTINCT FROM ${binds.p(c.value, "numeric")}`;
    case "between": {
      const [a, b] = c.value as number[];
      return `${x} BETWEEN ${binds.p(a, "numeric")} AND ${binds.p(b, "numeric")}`;
    }
    case "in":
      return `${x} = ANY(${binds.p(c.value, "numeric[]")})`;
    case "not_in":
      return `(${x} IS NULL OR NOT (${x} = ANY(${binds.p(c.value, "numeric[]")})))`;
    case "is_set":
      return `${x} IS NOT NULL`;
    case "is_not_set":
      return `${x} IS NULL`;
    default:
      throw new Error(`Operator ${c.operator} reached the compiler for a number field`);
  }
}

function datePredicate(c: FieldCondition, binds: Binds, x: string, cast: string): string {
  switch (c.operator) {
    case "before":
      return `${x} < ${binds.p(c.value, cast)}`;
    case "after":
      return `${x} > ${binds.p(c.value, cast)}`;
    case "between": {
      const [a, b] = c.value as string[];
      return `${x} BETWEEN ${binds.p(a, cast)} AND ${binds.p(b, cast)}`;
    }
    case "within_last": {
      const days = (c.value as { days: number }).days;
      return `(${x} >= now() - make_interval(days => ${binds.p(days, "int")}) AND ${x} <= now())`;
    }
    case "is_set":
      return `${x} IS NOT NULL`;
    case "is_not_set":
      return `${x} IS NULL`;
    default:
      throw new Error(`Operator ${c.operator} reached the compiler for a date field`);
  }
}

function tagsPredicate(c: FieldCondition, binds: Binds, x: string): string {
  switch (c.operator) {
    case "contains":
      return `${x} @> ARRAY[${binds.p(c.value, "text")}]`;
    case "not_contains":
      return `NOT (${x} @> ARRAY[${binds.p(c.value, "text")}])`;
    case "in":
      return `${x} && ${binds.p(c.value, "text[]")}`;
    case "not_in":
      return `NOT (${x} && ${binds.p(c.value, "text[]")})`;
    case "is_set":
      return `cardinality(${x}) > 0`;
    case "is_not_set":
      return `cardinality(${x}) = 0`;
    default:
      throw new Error(`Operator ${c.operator} reached the compiler for tags`);
  }
}

function consentPredicate(c: FieldCondition, binds: Binds, x: string): string {
  switch (c.operator) {
    case "eq":
      return `${x} = ${binds.p(c.value, "text")}`;
    case "neq":
      return `${x} <> ${binds.p(c.value, "text")}`;
    case "in":
      return `${x} = ANY(${binds.p(c.value, "text[]")})`;
    case "not_in":
      return `NOT (${x} = ANY(${binds.p(c.value, "text[]")}))`;
    default:
      throw new Error(`Operator ${c.operator} reached the compiler for consent`);
  }
}

/**
 * A JSON value at a path (`attributes.plan`): equality is JSON equality (so
 * "42" and 42 differ); text operators see a string's text; number operators
 * see numbers and numeric strings; date operators see ISO date strings. The
 * helper functions are created by migration 0020 and never raise.
 */
function jsonPredicate(
  c: FieldCondition,
  binds: Binds,
  field: Extract<ResolvedField, { kind: "json" }>,
): string {
  const path = binds.p(field.path, "text[]");
  const j = `(${field.column} #> ${path})`;
  const t = `(${field.column} #>> ${path})`;
  const num = `segments_num(${j})`;
  const ts = `segments_ts(${j})`;
  switch (c.operator) {
    case "eq":
      return `${j} = ${binds.p(jsonText(c.value), "jsonb")}`;
    case "neq":
      return `${j} IS DISTINCT FROM ${binds.p(jsonText(c.value), "jsonb")}`;
    case "contains":
    case "not_contains": {
      // A JSON array contains an element; a string contains a substring.
      const element = binds.p(jsonText([c.value]), "jsonb");
      const pattern = binds.p(`%${likeEscape(String(c.value))}%`, "text");
      const has = `(CASE jsonb_typeof(${j}) WHEN 'array' THEN ${j} @> ${element} WHEN 'string' THEN ${t} ILIKE ${pattern} ELSE false END)`;
      return c.operator === "contains" ? has : `NOT COALESCE(${has}, false)`;
    }
    case "starts_with":
      return `(jsonb_typeof(${j}) = 'string' AND ${t} ILIKE ${binds.p(`${likeEscape(String(c.value))}%`, "text")})`;
    case "ends_with":
      return `(jsonb_typeof(${j}) = 'string' AND ${t} ILIKE ${binds.p(`%${likeEscape(String(c.value))}`, "text")})`;
    case "in":
      return `${j} = ANY(${binds.p((c.value as unknown[]).map(jsonText), "jsonb[]")})`;
    case "not_in":
      return `(${j} IS NULL OR NOT (${j} = ANY(${binds.p((c.value as unknown[]).map(jsonText), "jsonb[]")})))`;
    case "gt":
    case "gte":
    case "lt":
    case "lte":
      return numberPredicate(c, binds, num);
    case "between": {
      const dates = (c.value as unknown[]).every((v) => typeof v === "string");
      return dates ? datePredicate(c, binds, ts, "timestamptz") : numberPredicate(c, binds, num);
    }
    case "before":
    case "after":
    case "within_last":
      return datePredicate(c, binds, ts, "timestamptz");
    case "is_set":
      return `COALESCE(${j} NOT IN ('null'::jsonb, '""'::jsonb), false)`;
    case "is_not_set":
      return `NOT COALESCE(${j} NOT IN ('null'::jsonb, '""'::jsonb), false)`;
    default:
      throw new Error(`Operator ${c.operator} reached the compiler for a JSON field`);
  }
}
