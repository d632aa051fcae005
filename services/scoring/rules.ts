import { Binds } from "../../lib/database";
import { compileField } from "../segments/filter-compiler";
import {
  validateFilter,
  type Condition,
  type FieldCondition,
  type FilterGroup,
} from "../segments/filter-schema";
import { validationError, type FieldIssue } from "../../lib/errors";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * The scoring rules engine's pure parts: validating a rule (its `where`, its
 * `condition` in the segments language, which of its fields go together) and
 * compiling `where` to a predicate over an event row aliased `e`. The same
 * predicates score one event or contact as it changes and everything on
 * recalculation, so both always agree.
 */

export interface RuleDefinition {
  id: string;
  name: string;
  /** An event rule scores events of this type; a condition rule has `condition` instead. */
  eventType: string | null;
  where: FieldCondition[] | null;
  condition: FilterGroup | null;
  /** Event types the condition reads (an event of one of them re-evaluates it). */
  conditionEventTypes: string[];
  points: number;
  maxPerContact: number | null;
  periodDays: number | null;
  maxPerPeriod: number | null;
  /** Points given by an event rule expire this many days after the event. */
  decayDays: number | null;
}

/** Problems in a `where` list, with paths rooted at `where`. */
export function validateWhere(where: unknown): FieldIssue[] {
  const probe = { match: "all", conditions: [{ event: "x", operator: "performed", where }] };
  const { issues } = validateFilter(probe, "");
  const prefix = ".conditions[0].where";
  return issues.map((i) => ({
    field: i.field.startsWith(prefix) ? `where${i.field.slice(prefix.length)}` : "where",
    message: i.message,
  }));
}

const isGroup = (c: Condition): c is FilterGroup => "conditions" in c;

/**
 * Problems in a rule's `condition` (paths rooted at `condition`) and the event
 * types it reads. Beyond the segments language, a condition may not read what
 * changes without a contact write or an event: `score` (the rule's own points
 * would feed back into it), segment membership, and the clock (`within_last`,
 * an event's `within`); so live scoring and recalculation always agree.
 */
export function validateCondition(condition: unknown): { issues: FieldIssue[]; eventTypes: string[] } {
  const { issues, facts } = validateFilter(condition, "condition");
  if (issues.length) return { issues, eventTypes: [] };
  const found: FieldIssue[] = [];
  const walk = (group: FilterGroup, path: string) =>
    group.conditions.forEach((c, i) => {
      const at = `${path}.conditions[${i}]`;
      if (isGroup(c)) return walk(c, at);
      if ("segment" in c)
        return found.push({ field: `${at}.segment`, message: "segment membership cannot score a rule" });
      if ("event" in c) {
        if (c.within) found.push({ field: `${at}.within`, message: "time windows cannot score a rule" });
        c.where?.forEach((w, k) => {
          if (w.operator === "within_last")
            found.push({ field: `${at}.where[${k}].operator`, message: "time windows cannot score a rule" });
        });
        return;
      }
      if (c.field === "score")
        found.push({ field: `${at}.field`, message: "a rule's condition cannot read the score it changes" });
      else if (c.operator === "within_last")
        found.push({ field: `${at}.operator`, message: "time windows cannot score a rule" });
    });
  walk(condition as FilterGroup, "condition");
  return { issues: found, eventTypes: facts.eventTypes };
}

/** A rule's fields after a create or a PATCH merged into the stored rule. */
export interface RuleShape {
  eventType: string | null;
  condition: unknown;
  where: unknown;
  maxPerContact: number | null;
  periodCap: unknown;
  decay: unknown;
}

const present = (v: unknown) => v !== undefined && v !== null && !(Array.isArray(v) && v.length === 0);

/**
 * Which fields go together: exactly one of `eventType` and `condition`; `where`,
 * caps and decay belong to event rules. `given` names the fields the request
 * set, so the message names the one the client sent.
 */
export function ruleShapeIssues(rule: RuleShape, given: Set<string>): FieldIssue[] {
  const hasEvent = present(rule.eventType);
  const hasCondition = present(rule.condition);
  if (hasEvent && hasCondition) {
    const field = given.has("condition") ? "condition" : "eventType";
    return [{ field, message: "a rule has either eventType or condition, not both" }];
  }
  if (!hasEvent && !hasCondition)
    return [{ field: "eventType", message: "a rule needs eventType (an event rule) or condition" }];
  if (!hasCondition) return [];
  return (["where", "maxPerContact", "periodCap", "decay"] as const)
    .filter((f) => present(rule[f]))
    .map((field) => ({ field, message: "applies only to event rules" }));
}

/** A rule as the API writes it (create, or the fields a PATCH sends). */
export interface RuleInput {
  name?: string;
  eventType?: string;
  where?: FieldCondition[] | null;
  condition?: FilterGroup;
  points?: number;
  maxPerContact?: number | null;
  periodCap?: { max: number; days: number } | null;
  decay?: { days: number } | null;
  active?: boolean;
}

/** The stored rule's fields a PATCH merges into. */
export interface StoredRuleShape {
  eventType: string | null;
  condition: FilterGroup | null;
  where: FieldCondition[] | null;
  maxPerContact: number | null;
  periodCap: { max: number; days: number } | null;
  decay: { days: number } | null;
}

function refuse(subject: string, issues: FieldIssue[]) {
  if (issues.length)
    throw validationError(`Invalid ${subject}: ${issues[0].field} ${issues[0].message}`, issues);
}

/**
 * Check a rule being created (no `stored`) or changed (the PATCH's fields over
 * `stored`): 400 naming the field otherwise. Answers the event types its
 * condition reads (empty when the input sets no condition).
 */
export function checkRule(input: RuleInput, stored?: StoredRuleShape): string[] {
  const given = new Set(Object.keys(input).filter((k) => input[k as keyof RuleInput] !== undefined));
  const pick = <K extends keyof StoredRuleShape & keyof RuleInput>(key: K) =>
    input[key] !== undefined ? input[key] : (stored?.[key] ?? null);
  refuse(
    "rule",
    ruleShapeIssues(
      {
        eventType: (pick("eventType") as string | null) ?? null,
        condition: pick("condition"),
        where: pick("where"),
        maxPerContact: (pick("maxPerContact") as number | null) ?? null,
        periodCap: pick("periodCap"),
        decay: pick("decay"),
      },
      given,
    ),
  );
  if (input.where !== undefined && input.where !== null) refuse("where", validateWhere(input.where));
  if (input.condition === undefined || input.condition === null) return [];
  const { issues, eventTypes } = validateCondition(input.condition);
  refuse("condition", issues);
  return eventTypes;
}

/** The rule's `where` as one predicate over `e` (true when it has none). */
export function compileWhere(where: FieldCondition[] | null, binds: Binds): string {
  if (!where?.length) return "true";
  return `COALESCE((${where.map((w) => compileField(w, binds, "event")).join(" AND ")}), false)`;
}

/** Start of the cap period holding `ts` (periods are fixed windows of `days` counted from the Unix epoch). */
export function periodStartSql(ts: string, daysParam: string): string {
  return `to_timestamp(floor(extract(epoch FROM ${ts}) / (${daysParam} * 86400)) * (${daysParam} * 86400))`;
}

/** When an entry earned at `ts` expires under a rule decaying after `daysParam` days (NULL: never). */
export function decaysAtSql(ts: string, daysParam: string): string {
  return `CASE WHEN ${daysParam} IS NULL THEN NULL ELSE ${ts} + make_interval(days => ${daysParam}) END`;
}

/**
 * Jobs in rounds where each contact appears at most once, its events in
 * arrival order: a round's rules run as one statement whose cap counts see
 * every earlier round (earlier statements of the transaction) and no entry of
 * the same contact within the statement, so caps stay exact. Within a round,
 * jobs are grouped by workspace and rule set, which share one statement.
 */
export function scoringRounds<J extends { workspaceId: WorkspaceId; contactId: string; group: string }>(
  jobs: J[],
): number[][][] {
  const seen = new Map<string, number>();
  const rounds: Array<Map<string, number[]>> = [];
  jobs.forEach((job, i) => {
    const key = `${job.workspaceId}/${job.contactId}`;
    const round = seen.get(key) ?? 0;
    seen.set(key, round + 1);
    rounds[round] ??= new Map();
    const groups = rounds[round];
    groups.set(job.group, [...(groups.get(job.group) ?? []), i]);
  });
  return rounds.map((groups) => [...groups.values()]);
}
