import { Readable, pipeline } from "node:stream";
import { stringify } from "csv-stringify";

/**
 * A report's answer as CSV (contract-messaging 12): a row per item of the
 * answer's main array (its first top-level array: `points` of a timeseries,
 * `channels` of deliverability, `steps` of a funnel), or one row of the
 * whole answer when it has none (overview). Nested keys are joined by `.`
 * (`counts.sent`, `retention.0`); columns are every key met, in the order
 * first met; a missing or null value is an empty cell.
 */

type Cell = string | number | boolean | null;

/** `value`'s leaves by dotted path; a scalar item is the one column `value`. */
export function flatten(value: unknown, prefix = ""): Array<[string, Cell]> {
  if (value === null || value === undefined) return prefix ? [[prefix, null]] : [];
  if (typeof value !== "object") return [[prefix || "value", value as Cell]];
  const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value);
  // An empty object or array still names its column, so the row keeps its shape.
  if (entries.length === 0) return prefix ? [[prefix, null]] : [];
  return entries.flatMap(([key, inner]) => flatten(inner, prefix ? `${prefix}.${key}` : key));
}

/** The items a CSV has a row for. */
export function rowsOf(result: unknown): unknown[] {
  if (result && typeof result === "object" && !Array.isArray(result)) {
    const main = Object.values(result).find(Array.isArray);
    if (main) return main;
  }
  return Array.isArray(result) ? result : [result];
}

/** Header and rows of `result`, each row's cells in the header's order. */
export function table(result: unknown): { header: string[]; rows: Cell[][] } {
  const flat = rowsOf(result).map((item) => new Map(flatten(item)));
  const header = [...new Set(flat.flatMap((row) => [...row.keys()]))];
  return { header, rows: flat.map((row) => header.map((column) => row.get(column) ?? null)) };
}

/** `result` as a streamed CSV (header first). */
export function csvStream(result: unknown): Readable {
  const { header, rows } = table(result);
  // pipeline (not pipe): a failing source destroys the response stream instead of leaving it open.
  return pipeline(
    Readable.from([header, ...rows]),
    stringify({ cast: { boolean: String } }),
    () => undefined,
  );
}

/** `result` as one CSV text (a mail attachment or body). */
export async function csvText(result: unknown): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of csvStream(result)) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks).toString("utf8");
}
