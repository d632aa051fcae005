import { Binds, compileField } from "../segments/filter-compiler";
import { validateFilter, type FieldCondition } from "../segments/filter-schema";
import type { FieldIssue } from "../../lib/errors";

/**
 * The scoring rules engine's pure parts: validating a rule's `where` (the
 * form of an event condition's `where`, checked by the segments language)
 * and compiling it to a predicate over an event row aliased `e`. The same
 * predicate scores one event as it arrives and every event on recalculation,
 * so both always agree.
 */

export interface RuleDefinition {
  id: string;
  name: string;
  eventType: string;
  where: FieldCondition[] | null;
  points: number;
  maxPerContact: number | null;
  periodDays: number | null;
  maxPerPeriod: number | null;
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

/** The rule's `where` as one predicate over `e` (true when it has none). */
export function compileWhere(where: FieldCondition[] | null, binds: Binds): string {
  if (!where?.length) return "true";
  return `COALESCE((${where.map((w) => compileField(w, binds, "event")).join(" AND ")}), false)`;
}

/** Start of the cap period holding `ts` (periods are fixed windows of `days` counted from the Unix epoch). */
export function periodStartSql(ts: string, daysParam: string): string {
  return `to_timestamp(floor(extract(epoch FROM ${ts}) / (${daysParam} * 86400)) * (${daysParam} * 86400))`;
}
