import type { FieldIssue } from "../../lib/errors";
import { CONSENT_CHANNELS } from "../../lib/channels";
import { CONTACT_FIELDS as CONTACT_FIELD_DEFS, FILTER_TYPES } from "../contacts/fields";

/**
 * The segment filter language (contract "Segments and scoring"): types,
 * the field catalogue and a validator that reports the path of every bad
 * node (`filter.conditions[2].operator`). The compiler trusts only filters
 * that passed `validateFilter`.
 */

export type FieldType = "text" | "email" | "number" | "date" | "tags" | "json" | "consent";

export type FieldOperator =
  | "eq"
  | "neq"
  | "contains"
  | "not_contains"
  | "starts_with"
  | "ends_with"
  | "in"
  | "not_in"
  | "gt"
  | "gte"
  | "lt"
  | "lte"
  | "between"
  | "is_set"
  | "is_not_set"
  | "before"
  | "after"
  | "within_last";

export interface FieldCondition {
  field: string;
  operator: FieldOperator;
  value?: unknown;
}

export interface EventCondition {
  event: string;
  operator: "performed" | "not_performed";
  count?: { gte?: number; lte?: number; eq?: number };
  within?: { days: number };
  where?: FieldCondition[];
}

export interface SegmentCondition {
  segment: string;
  operator: "in" | "not_in";
}

export interface FilterGroup {
  match: "all" | "any";
  conditions: Condition[];
}

export type Condition = FieldCondition | EventCondition | SegmentCondition | FilterGroup;

export const MAX_DEPTH = 10;
export const MAX_CONDITIONS = 200;
export const MAX_LIST = 1000;
const MAX_DAYS = 36_500;
const MAX_TEXT = 1000;

/** Whitelisted contact columns; nothing else ever reaches the SQL as an identifier. */
export const CONTACT_FIELDS: Record<string, { column: string; type: FieldType }> = {
  id: { column: "c.id", type: "text" },
  // Every contact field but the JSON objects (read by path below), as contacts/fields.ts defines them.
  ...Object.fromEntries(
    Object.entries(CONTACT_FIELD_DEFS)
      .filter(([, f]) => f.kind !== "json")
      .map(([name, f]) => [name, { column: `c.${f.column}`, type: FILTER_TYPES[f.kind] as FieldType }]),
  ),
  createdAt: { column: "c.created_at", type: "date" },
  updatedAt: { column: "c.updated_at", type: "date" },
};

/** `company.<field>`: the contact's company (CRM table `companies`), read through a scalar subquery. */
const company = (column: string) =>
  `(SELECT co.${column} FROM companies co WHERE co.id = c.company_id AND co.workspace_id = c.workspace_id)`;
export const COMPANY_FIELDS: Record<string, { column: string; type: FieldType }> = {
  name: { column: company("name"), type: "text" },
  domain: { column: company("domain"), type: "text" },
  website: { column: company("website"), type: "text" },
  industry: { column: company("industry"), type: "text" },
  currency: { column: company("currency"), type: "text" },
  phone: { column: company("phone"), type: "text" },
  employeeCount: { column: company("employee_count"), type: "number" },
  annualRevenue: { column: company("annual_revenue"), type: "number" },
  tags: { column: `COALESCE(${company("tags")}, '{}'::text[])`, type: "tags" },
  createdAt: { column: company("created_at"), type: "date" },
};

/** The event's own columns usable in an event condition's `where` (beside `metadata.<key>`). */
export const EVENT_FIELDS: Record<string, { column: string; type: FieldType }> = {
  type: { column: "e.type", type: "text" },
  sessionId: { column: "e.session_id", type: "text" },
  pageUrl: { column: "e.page_url", type: "text" },
  referrer: { column: "e.referrer", type: "text" },
  utmSource: { column: "e.utm_source", type: "text" },
  utmMedium: { column: "e.utm_medium", type: "text" },
  utmCampaign: { column: "e.utm_campaign", type: "text" },
  timestamp: { column: "e.timestamp", type: "date" },
};

/** JSON documents addressable by a dotted path: `attributes.plan`, `customFields.size`, `metadata.amount`. */
export const CONTACT_JSON: Record<string, string> = Object.fromEntries(
  Object.entries(CONTACT_FIELD_DEFS)
    .filter(([, f]) => f.kind === "json")
    .map(([name, f]) => [name, `c.${f.column}`]),
);
export const EVENT_JSON: Record<string, string> = { metadata: "e.metadata" };

export const CONSENT_STATUSES = ["opted_in", "opted_out", "unknown"] as const;

const TEXT_OPS: FieldOperator[] = [
  "eq",
  "neq",
  "contains",
  "not_contains",
  "starts_with",
  "ends_with",
  "in",
  "not_in",
  "is_set",
  "is_not_set",
];
const NUMBER_OPS: FieldOperator[] = [
  "eq",
  "neq",
  "gt",
  "gte",
  "lt",
  "lte",
  "between",
  "in",
  "not_in",
  "is_set",
  "is_not_set",
];
const DATE_OPS: FieldOperator[] = ["before", "after", "between", "within_last", "is_set", "is_not_set"];

/** Which operators each field type accepts; anything else is "wrong operator for the type". */
export const OPERATORS: Record<FieldType, FieldOperator[]> = {
  text: TEXT_OPS,
  email: TEXT_OPS,
  number: NUMBER_OPS,
  date: DATE_OPS,
  tags: ["contains", "not_contains", "in", "not_in", "is_set", "is_not_set"],
  consent: ["eq", "neq", "in", "not_in"],
  json: [...new Set([...TEXT_OPS, ...NUMBER_OPS, ...DATE_OPS])],
};

export type ResolvedField =
  | { kind: "column"; column: string; type: FieldType }
  | { kind: "json"; column: string; path: string[]; type: "json" }
  | { kind: "consent"; channel: string; type: "consent" };

export type FieldScope = "contact" | "event";

/** Map a field name to a whitelisted column (or JSON path); undefined when the field does not exist. */
export function resolveField(name: string, scope: FieldScope): ResolvedField | undefined {
  const columns = scope === "contact" ? CONTACT_FIELDS : EVENT_FIELDS;
  if (Object.prototype.hasOwnProperty.call(columns, name)) return { kind: "column", ...columns[name] };
  const dot = name.indexOf(".");
  if (dot <= 0) return undefined;
  const head = name.slice(0, dot);
  const path = name.slice(dot + 1).split(".");
  if (path.some((p) => p.length === 0 || p.length > 100)) return undefined;
  if (scope === "contact" && head === "company") {
    if (path.length === 1 && Object.prototype.hasOwnProperty.call(COMPANY_FIELDS, path[0])) {
      return { kind: "column", ...COMPANY_FIELDS[path[0]] };
    }
    if (path.length >= 2 && path[0] === "attributes") {
      return { kind: "json", column: company("attributes"), path: path.slice(1), type: "json" };
    }
    return undefined;
  }
  const docs = scope === "contact" ? CONTACT_JSON : EVENT_JSON;
  if (Object.prototype.hasOwnProperty.call(docs, head))
    return { kind: "json", column: docs[head], path, type: "json" };
  if (
    scope === "contact" &&
    head === "consent" &&
    path.length === 1 &&
    (CONSENT_CHANNELS as readonly string[]).includes(path[0])
  ) {
    return { kind: "consent", channel: path[0], type: "consent" };
  }
  return undefined;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
const isDate = (v: unknown) =>
  typeof v === "string" && v.length <= 40 && /^\d{4}-\d{2}-\d{2}/.test(v) && !Number.isNaN(Date.parse(v));
const isFiniteNumber = (v: unknown) => typeof v === "number" && Number.isFinite(v);
const isText = (v: unknown) => typeof v === "string" && v.length <= MAX_TEXT;
const isScalar = (v: unknown) => isText(v) || isFiniteNumber(v) || typeof v === "boolean";
const isDays = (v: unknown) =>
  isObject(v) &&
  Number.isInteger(v.days) &&
  (v.days as number) >= 1 &&
  (v.days as number) <= MAX_DAYS &&
  Object.keys(v).length === 1;

/** What a condition's `value` must look like, given the field type and operator; a message when it does not. */
function valueProblem(type: FieldType, op: FieldOperator, value: unknown): string | undefined {
  if (op === "is_set" || op === "is_not_set")
    return value === undefined || value === null ? undefined : "must be absent";
  if (op === "within_last")
    return isDays(value) ? undefined : `must be {days} with days from 1 to ${MAX_DAYS}`;
  if (op === "before" || op === "after") return isDate(value) ? undefined : "must be an ISO 8601 date";
  if (op === "between") {
    if (!Array.isArray(value) || value.length !== 2) return "must be [from, to]";
    if (type === "date") return value.every(isDate) ? undefined : "must be two ISO 8601 dates";
    if (type === "number") return value.every(isFiniteNumber) ? undefined : "must be two numbers";
    return value.every(isFiniteNumber) || value.every(isDate)
      ? undefined
      : "must be two numbers or two ISO 8601 dates";
  }
  if (op === "in" || op === "not_in") {
    if (!Array.isArray(value) || value.length === 0 || value.length > MAX_LIST)
      return `must be a list of 1 to ${MAX_LIST} values`;
    const one =
      type === "number"
        ? isFiniteNumber
        : type === "json"
          ? isScalar
          : type === "consent"
            ? isConsent
            : isText;
    return value.every(one) ? undefined : `must hold only ${itemKind(type)}`;
  }
  if (op === "gt" || op === "gte" || op === "lt" || op === "lte")
    return isFiniteNumber(value) ? undefined : "must be a number";
  if (op === "contains" || op === "not_contains" || op === "starts_with" || op === "ends_with") {
    return isText(value) && (value as string).length > 0 ? undefined : "must be a non-empty string";
  }
  // eq, neq
  if (type === "number") return isFiniteNumber(value) ? undefined : "must be a number";
  if (type === "json") return isScalar(value) ? undefined : "must be a string, number or boolean";
  if (type === "consent")
    return isConsent(value) ? undefined : `must be one of ${CONSENT_STATUSES.join(", ")}`;
  return isText(value) ? undefined : "must be a string";
}

const isConsent = (v: unknown) =>
  typeof v === "string" && (CONSENT_STATUSES as readonly string[]).includes(v);
const itemKind = (type: FieldType) =>
  type === "number"
    ? "numbers"
    : type === "json"
      ? "strings, numbers or booleans"
      : type === "consent"
        ? "consent statuses"
        : "strings";

/** Facts about a filter the evaluator needs: which segments, event types and fields it depends on. */
export interface FilterFacts {
  segmentIds: string[];
  /** Each segment reference with the path of its node, for error messages. */
  segmentRefs: Array<{ id: string; path: string }>;
  eventTypes: string[];
  usesScore: boolean;
  /** Whether the filter reads the clock (`within_last`, an event's `within`): time passing alone can change it. */
  timeRelative: boolean;
}

export interface ValidationResult {
  issues: FieldIssue[];
  facts: FilterFacts;
}

/**
 * Check a filter against the language. Reports every problem with the path
 * of the bad node; `facts` is meaningful only when `issues` is empty.
 */
export function validateFilter(filter: unknown, root = "filter"): ValidationResult {
  const issues: FieldIssue[] = [];
  const facts: FilterFacts = {
    segmentIds: [],
    segmentRefs: [],
    eventTypes: [],
    usesScore: false,
    timeRelative: false,
  };
  let conditions = 0;
  const issue = (field: string, message: string) => {
    if (issues.length < 50) issues.push({ field, message });
  };

  const checkField = (c: Record<string, unknown>, path: string, scope: FieldScope) => {
    const allowed = new Set(["field", "operator", "value"]);
    for (const key of Object.keys(c)) if (!allowed.has(key)) issue(`${path}.${key}`, "is not allowed here");
    if (typeof c.field !== "string") return issue(`${path}.field`, "must be a string");
    const resolved = resolveField(c.field, scope);
    if (!resolved) return issue(`${path}.field`, `unknown field '${c.field.slice(0, 100)}'`);
    if (resolved.kind === "column" && resolved.column === "c.score") facts.usesScore = true;
    const ops = OPERATORS[resolved.type];
    if (typeof c.operator !== "string" || !ops.includes(c.operator as FieldOperator)) {
      return issue(`${path}.operator`, `must be one of ${ops.join(", ")} for field '${c.field}'`);
    }
    if (c.operator === "within_last") facts.timeRelative = true;
    const problem = valueProblem(resolved.type, c.operator as FieldOperator, c.value);
    if (problem) issue(`${path}.value`, problem);
  };

  const checkEvent = (c: Record<string, unknown>, path: string) => {
    const allowed = new Set(["event", "operator", "count", "within", "where"]);
    for (const key of Object.keys(c)) if (!allowed.has(key)) issue(`${path}.${key}`, "is not allowed here");
    if (typeof c.event !== "string" || c.event.length === 0 || c.event.length > 200) {
      issue(`${path}.event`, "must be an event type (1 to 200 characters)");
    } else if (!facts.eventTypes.includes(c.event)) facts.eventTypes.push(c.event);
    if (c.operator !== "performed" && c.operator !== "not_performed")
      issue(`${path}.operator`, "must be performed or not_performed");
    if (c.count !== undefined) {
      const count = c.count;
      const keys = isObject(count) ? Object.keys(count) : [];
      if (
        !isObject(count) ||
        keys.length !== 1 ||
        !["gte", "lte", "eq"].includes(keys[0]) ||
        !Number.isInteger(count[keys[0]]) ||
        (count[keys[0]] as number) < 0 ||
        (count[keys[0]] as number) > 1_000_000
      ) {
        issue(`${path}.count`, "must be one of {gte: n}, {lte: n}, {eq: n} with n a whole number from 0");
      }
    }
    if (c.within !== undefined && !isDays(c.within))
      issue(`${path}.within`, `must be {days} with days from 1 to ${MAX_DAYS}`);
    if (c.within !== undefined) facts.timeRelative = true;
    if (c.where !== undefined) {
      if (!Array.isArray(c.where)) return issue(`${path}.where`, "must be a list of conditions");
      if (c.where.length > 50) return issue(`${path}.where`, "must hold at most 50 conditions");
      c.where.forEach((w, i) => {
        const wpath = `${path}.where[${i}]`;
        conditions += 1;
        if (!isObject(w) || !("field" in w)) return issue(wpath, "must be a field condition");
        checkField(w, wpath, "event");
      });
    }
  };

  const checkSegment = (c: Record<string, unknown>, path: string) => {
    for (const key of Object.keys(c))
      if (key !== "segment" && key !== "operator") issue(`${path}.${key}`, "is not allowed here");
    if (typeof c.segment !== "string" || c.segment.length === 0 || c.segment.length > 64) {
      issue(`${path}.segment`, "must be a segment id");
    } else {
      facts.segmentRefs.push({ id: c.segment, path: `${path}.segment` });
      if (!facts.segmentIds.includes(c.segment)) facts.segmentIds.push(c.segment);
    }
    if (c.operator !== "in" && c.operator !== "not_in") issue(`${path}.operator`, "must be in or not_in");
  };

  const checkGroup = (g: unknown, path: string, depth: number) => {
    if (!isObject(g)) return issue(path, "must be a group {match, conditions}");
    if (depth > MAX_DEPTH) return issue(path, `groups may be nested at most ${MAX_DEPTH} deep`);
    for (const key of Object.keys(g))
      if (key !== "match" && key !== "conditions") issue(`${path}.${key}`, "is not allowed here");
    if (g.match !== "all" && g.match !== "any") issue(`${path}.match`, "must be all or any");
    if (!Array.isArray(g.conditions)) return issue(`${path}.conditions`, "must be a list");
    g.conditions.forEach((c, i) => {
      const cpath = `${path}.conditions[${i}]`;
      conditions += 1;
      if (conditions > MAX_CONDITIONS) {
        if (conditions === MAX_CONDITIONS + 1)
          issue(cpath, `a filter may hold at most ${MAX_CONDITIONS} conditions`);
        return;
      }
      if (!isObject(c)) return issue(cpath, "must be a condition or a group");
      const kinds = ["field", "event", "segment", "conditions"].filter((k) => k in c);
      if (kinds.length !== 1)
        return issue(cpath, "must have exactly one of field, event, segment or a nested group");
      if (kinds[0] === "field") checkField(c, cpath, "contact");
      else if (kinds[0] === "event") checkEvent(c, cpath);
      else if (kinds[0] === "segment") checkSegment(c, cpath);
      else checkGroup(c, cpath, depth + 1);
    });
  };

  checkGroup(filter, root, 1);
  return { issues, facts };
}

/**
 * Check conditions on one event (an event condition's `where`: its type,
 * `metadata.*` and the other event fields), reporting each problem under
 * `root` (`config.where[1].field`).
 */
export function validateEventWhere(where: unknown, root: string): FieldIssue[] {
  const inner = "filter.conditions[0].where";
  const { issues } = validateFilter({
    match: "all",
    conditions: [{ event: "_", operator: "performed", where }],
  });
  return issues.map((i) => ({
    field: i.field.startsWith(inner) ? `${root}${i.field.slice(inner.length)}` : root,
    message: i.message,
  }));
}

/** Facts of a filter already known to be valid (stored filters). */
export function filterFacts(filter: FilterGroup): FilterFacts {
  return validateFilter(filter).facts;
}

/**
 * Would saving `selfId` with references `refs` close a cycle? `graph` maps
 * every other segment to the segments its filter references. Answers the
 * cycle as a list of ids (self first), or null.
 */
export function findCycle(selfId: string, refs: string[], graph: Map<string, string[]>): string[] | null {
  const seen = new Set<string>();
  const walk = (id: string, trail: string[]): string[] | null => {
    if (id === selfId) return [selfId, ...trail];
    if (seen.has(id)) return null;
    seen.add(id);
    for (const next of graph.get(id) ?? []) {
      const found = walk(next, [...trail, next]);
      if (found) return found;
    }
    return null;
  };
  for (const ref of refs) {
    const found = walk(ref, [ref]);
    if (found) return found;
  }
  return null;
}
