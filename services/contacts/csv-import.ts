import type { Readable } from "node:stream";
import { CSV_WRITABLE_FIELDS } from "./fields";
import { parse } from "csv-parse";
import type { FieldIssue } from "../../lib/errors";
import { unstorableInput } from "../../lib/schema";
import { CONSENT_CHANNELS, type ConsentChannel } from "../../lib/channels";
import type { ConsentStatus } from "../../models";
import type { ContactInput } from "./fields";
import type { ConsentWanted } from "./upsert";

/**
 * CSV → contact inputs, streamed. The header row (line 1) names the columns;
 * `mapping` (CSV column → contact field) overrides, and columns named like a
 * field (`email`, `First Name`, `first_name`, `attributes.plan`,
 * `customFields.size`, `consent.email`) map themselves. Other columns are
 * ignored and reported.
 */

/** Export-only columns an import skips silently (ids and timestamps are the service's own). */
const READ_ONLY = new Set(["id", "score", "createdat", "updatedat", "workspaceid", "consent"]);

export type Target =
  | { kind: "field"; field: (typeof CSV_WRITABLE_FIELDS)[number] }
  | { kind: "attributes"; key: string }
  | { kind: "customFields"; key: string }
  | { kind: "consent"; channel: ConsentChannel };

const squash = (s: string) => s.toLowerCase().replace(/[\s_-]+/g, "");
const FIELD_BY_SQUASHED = new Map<string, (typeof CSV_WRITABLE_FIELDS)[number]>(
  CSV_WRITABLE_FIELDS.map((f) => [squash(f), f]),
);

/** A mapping target (`email`, `attributes.plan`, `customFields.size`, `consent.sms`) or null when it names nothing. */
export function parseTarget(name: string): Target | null {
  const dot = name.indexOf(".");
  if (dot > 0) {
    const prefix = name.slice(0, dot);
    const key = name.slice(dot + 1);
    if (!key || key.length > 100 || key.includes(".")) return null;
    if (squash(prefix) === "attributes") return { kind: "attributes", key };
    if (squash(prefix) === "customfields") return { kind: "customFields", key };
    if (squash(prefix) !== "consent") return null;
    const channel = CONSENT_CHANNELS.find((c) => c === key.toLowerCase());
    return channel ? { kind: "consent", channel } : null;
  }
  const field = FIELD_BY_SQUASHED.get(squash(name));
  return field ? { kind: "field", field } : null;
}

export interface ColumnPlan {
  targets: Array<Target | null>;
  ignored: string[];
}

/** Check a client mapping (400 details name `mapping.<column>`). A target of null or "" ignores the column. */
export function checkMapping(mapping: unknown): {
  mapping: Record<string, string | null>;
  issues: FieldIssue[];
} {
  const issues: FieldIssue[] = [];
  if (mapping === undefined || mapping === null) return { mapping: {}, issues };
  if (typeof mapping !== "object" || Array.isArray(mapping)) {
    return {
      mapping: {},
      issues: [{ field: "mapping", message: "must be a JSON object of CSV column → contact field" }],
    };
  }
  const out: Record<string, string | null> = {};
  for (const [column, target] of Object.entries(mapping as Record<string, unknown>)) {
    if (target === null || target === "") out[column] = null;
    else if (typeof target !== "string" || !parseTarget(target)) {
      issues.push({
        field: `mapping.${column}`,
        message: "must name a contact field, attributes.<key>, customFields.<key> or consent.<channel>",
      });
    } else out[column] = target;
  }
  return { mapping: out, issues };
}

export function planColumns(header: string[], mapping: Record<string, string | null>): ColumnPlan {
  const ignored: string[] = [];
  const targets = header.map((column) => {
    const name = column.trim();
    if (name in mapping) {
      const target = mapping[name];
      if (target === null) ignored.push(name);
      return target === null ? null : parseTarget(target);
    }
    const target = parseTarget(name);
    if (!target && !READ_ONLY.has(squash(name))) ignored.push(name);
    return target;
  });
  return { targets, ignored };
}

/**
 * The value of an `attributes.*` cell: JSON numbers, booleans, arrays and
 * objects come back typed (export writes non-strings as JSON, and strings that
 * would read as JSON as a JSON string), anything else is the text itself.
 */
export function decodeAttributeCell(cell: string): unknown {
  const t = cell.trim();
  if (/^(-?\d|true$|false$|null$|\[|\{|")/.test(t)) {
    try {
      return JSON.parse(t);
    } catch {
      return cell;
    }
  }
  return cell;
}

/** Tags cell: a JSON array or a `;`-separated list. */
export function decodeTags(cell: string): unknown {
  const t = cell.trim();
  if (t.startsWith("[")) {
    try {
      return JSON.parse(t);
    } catch {
      return t.split(";");
    }
  }
  return t
    .split(";")
    .map((s) => s.trim())
    .filter(Boolean);
}

const CONSENT_STATUSES = new Set<string>(["opted_in", "opted_out", "unknown"] satisfies ConsentStatus[]);

/** A `consent.<channel>` cell (any case): its status, or null when it is not one. */
export function decodeConsentCell(cell: string): ConsentStatus | null {
  const t = cell.trim().toLowerCase();
  return CONSENT_STATUSES.has(t) ? (t as ConsentStatus) : null;
}

/** One CSV record decoded: the contact input, the consent it asks for, and its bad consent cells. */
export interface CsvRow {
  input: ContactInput;
  consent?: ConsentWanted;
  issues: FieldIssue[];
}

/**
 * One CSV record; empty cells mean "not given", and so does a consent cell of
 * `unknown` (an import never takes a recorded opt-out or opt-in back).
 */
export function decodeRow(cells: string[], plan: ColumnPlan): CsvRow {
  const input: Record<string, unknown> = {};
  const attributes: Record<string, unknown> = {};
  const customFields: Record<string, unknown> = {};
  const consent: ConsentWanted = {};
  const issues: FieldIssue[] = [];
  plan.targets.forEach((target, i) => {
    const cell = cells[i];
    if (!target || cell === undefined || cell.trim() === "") return;
    if (target.kind === "attributes") attributes[target.key] = decodeAttributeCell(cell);
    else if (target.kind === "customFields") customFields[target.key] = cell;
    else if (target.kind === "consent") {
      const status = decodeConsentCell(cell);
      if (status === null)
        issues.push({
          field: `consent.${target.channel}`,
          message: "must be opted_in, opted_out or unknown (unknown or empty leaves it as it is)",
        });
      else if (status !== "unknown") consent[target.channel] = status;
    } else if (target.field === "tags") input.tags = decodeTags(cell);
    else input[target.field] = cell.trim();
  });
  if (Object.keys(attributes).length) input.attributes = attributes;
  if (Object.keys(customFields).length) input.customFields = customFields;
  return {
    input: input as ContactInput,
    consent: Object.keys(consent).length ? consent : undefined,
    issues,
  };
}

export type CsvItem =
  | { kind: "header"; plan: ColumnPlan; columns: string[] }
  | ({ kind: "row"; line: number } & CsvRow)
  | { kind: "bad"; line: number; error: string };

/**
 * Stream CSV records; broken rows become `bad` items. Lines are those of the
 * file (the header is line 1) and a record spanning lines reports its first.
 */
export async function* readCsv(
  source: Readable,
  mapping: Record<string, string | null>,
): AsyncGenerator<CsvItem> {
  const skipped: Array<{ line: number; error: string }> = [];
  // End line of the last record seen and empty lines counted so far, to find where the next record starts.
  let lastEnd = 0;
  let lastEmpty = 0;
  const parser = parse({
    bom: true,
    relax_column_count: true,
    skip_empty_lines: true,
    skip_records_with_error: true,
    info: true,
  });
  parser.on("skip", (err: Error & { lines?: number }) => {
    skipped.push({ line: err.lines ?? 0, error: `CSV: ${err.message}` });
  });
  source.on("error", (err) => parser.destroy(err));
  source.pipe(parser);
  let plan: ColumnPlan | null = null;
  let header: string[] = [];
  for await (const item of parser as AsyncIterable<{
    record: string[];
    info: { lines: number; empty_lines: number };
  }>) {
    const { record, info } = item;
    const line = lastEnd + 1 + (info.empty_lines - lastEmpty);
    lastEnd = info.lines;
    lastEmpty = info.empty_lines;
    while (skipped.length && skipped[0].line < line) yield { kind: "bad", ...skipped.shift()! };
    if (!plan) {
      header = record;
      plan = planColumns(record, mapping);
      yield { kind: "header", plan, columns: record };
      continue;
    }
    if (record.length !== plan.targets.length) {
      yield { kind: "bad", line, error: `expected ${plan.targets.length} columns, found ${record.length}` };
      continue;
    }
    // A cell PostgreSQL cannot store (a NUL byte) fails its line alone, before anything of it is written.
    const unstorable = record.findIndex((cell) => unstorableInput(cell) !== null);
    if (unstorable !== -1) {
      yield { kind: "bad", line, error: `column ${header[unstorable]} must not contain NUL characters` };
      continue;
    }
    yield { kind: "row", line, ...decodeRow(record, plan) };
  }
  while (skipped.length) yield { kind: "bad", ...skipped.shift()! };
}
