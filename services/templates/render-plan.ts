import { Output, TokenKind, type Liquid, type Template } from "liquidjs";

/**
 * Sends render the same template for thousands of contacts, and most of its
 * outputs print values every message shares (`{{ offer | upcase }}`, the
 * workspace's name) beside a few that are the contact's own. A template made
 * only of text and outputs is rendered here output by output, and an output
 * that prints one variable through filters that depend on nothing else keeps
 * what Liquid made of each value it saw: the next message with the same value
 * reuses it. Liquid still makes every output once; a template with any tag
 * (`if`, `for`, `assign`...) is rendered whole, as before.
 */

/**
 * Ours (render.ts): the text of the HTML a derived text part's output prints,
 * which is the string itself when it has no markup or entity.
 */
export const TEXT_OF_HTML = "text_of_html";
const MARKUP = /[<&]/;

/** Filters whose output depends on their input and literal arguments alone (`date` reads the clock for "now"). */
const PURE_FILTERS = new Set([
  "abs",
  "append",
  "at_least",
  "at_most",
  "capitalize",
  "ceil",
  "default",
  "divided_by",
  "downcase",
  "escape",
  "escape_once",
  "floor",
  "lstrip",
  "minus",
  "modulo",
  "newline_to_br",
  "plus",
  "prepend",
  "remove",
  "remove_first",
  "replace",
  "replace_first",
  "round",
  "rstrip",
  "strip",
  "strip_html",
  "strip_newlines",
  "times",
  "truncate",
  "truncatewords",
  "upcase",
  "url_decode",
  "url_encode",
  TEXT_OF_HTML,
]);
/** Property names Liquid answers itself on arrays and strings: their values are not plain lookups. */
const SPECIAL_PROPERTIES = new Set(["size", "first", "last"]);
/** Values kept per template, and the longest text kept: a plan holds at most about half a megabyte. */
const PLAN_MEMO_MAX = 1000;
const MEMO_TEXT_MAX = 500;
/** Lookups after which an output that mostly misses (a contact's own value) stops keeping them. */
const MEMO_TRIAL = 200;

interface MemoOutput {
  node: Template;
  /** The variable's path from the scope's top (empty: the output prints literals only). */
  path: string[];
  /** No filters: a string value prints as it is, with no need for Liquid. */
  plain: boolean;
  /** Only TEXT_OF_HTML: a string value without markup or entities prints as it is. */
  textOnly: boolean;
  memo: Map<unknown, string> | null;
  hits: number;
  misses: number;
}

/** Text (already what Liquid renders), an output rendered each time, or one whose values are kept. */
type Part = string | { node: Template } | MemoOutput;

export interface Plan {
  parts: Part[];
  /** Values kept by all its outputs. */
  kept: number;
}

/** The plan of a parsed template, or null when it has a tag (rendered whole). */
export function planOf(engine: Liquid, templates: Template[]): Plan | null {
  const parts: Part[] = [];
  for (const node of templates) {
    if (node.token.kind === TokenKind.HTML) parts.push(engine.renderSync([node], {}) as string);
    else if (node instanceof Output) parts.push(outputPart(engine, node));
    else return null;
  }
  return { parts, kept: 0 };
}

function outputPart(engine: Liquid, node: Output): Part {
  const { filters } = node.value;
  if (!filters.every((f) => PURE_FILTERS.has(f.name))) return { node };
  const variables = Object.values(engine.analyzeSync([node]).variables).flat();
  if (variables.length > 1) return { node };
  const path = variables.length ? variables[0].segments : [];
  if (!path.every((s) => typeof s === "string" && !SPECIAL_PROPERTIES.has(s))) return { node };
  return {
    node,
    path: path as string[],
    plain: !filters.length,
    textOnly: filters.length === 1 && filters[0].name === TEXT_OF_HTML,
    memo: new Map(),
    hits: 0,
    misses: 0,
  };
}

/** A scope's value at `path` as Liquid looks it up: own properties only, missing is undefined. */
function valueAt(scope: Record<string, unknown>, path: string[]): unknown {
  let value: unknown = scope;
  for (const segment of path) {
    if (value === null || typeof value !== "object" || !Object.hasOwn(value, segment)) return undefined;
    value = (value as Record<string, unknown>)[segment];
  }
  return value;
}

const UNKEPT = Symbol("unkept");

/** A value as its memo key: itself when primitive (a Map tells "1" from 1); objects, arrays and -0 are not kept. */
function keyOf(value: unknown): unknown {
  if (value === null || value === undefined || typeof value === "string" || typeof value === "boolean")
    return value;
  return typeof value === "number" && !Object.is(value, -0) ? value : UNKEPT;
}

/**
 * Render a plan over `scope`. Liquid's limits apply to each output; the whole
 * keeps to the render's: at most `limits.length` characters and `limits.ms`.
 */
export function renderPlan(
  engine: Liquid,
  plan: Plan,
  scope: Record<string, unknown>,
  limits: { length: number; ms: number },
): string {
  const started = performance.now();
  // The clock is read after Liquid's renders only: a kept value costs nothing worth timing.
  const byLiquid = (node: Template) => {
    const text = engine.renderSync([node], scope) as string;
    if (performance.now() - started > limits.ms) throw new Error(`template render exceeded ${limits.ms}ms`);
    return text;
  };
  let out = "";
  for (const part of plan.parts) {
    if (typeof part === "string") out += part;
    else if (!("memo" in part)) out += byLiquid(part.node);
    else out += printed(part, plan, scope, byLiquid);
    if (out.length > limits.length)
      throw new Error(`template render exceeded the memory limit (${limits.length})`);
  }
  return out;
}

/** What an output prints: a string as it is when it has no filters, else what Liquid made of its value before. */
function printed(
  part: MemoOutput,
  plan: Plan,
  scope: Record<string, unknown>,
  byLiquid: (node: Template) => string,
): string {
  const value = part.path.length ? valueAt(scope, part.path) : undefined;
  if (typeof value === "string" && (part.plain || (part.textOnly && !MARKUP.test(value)))) return value;
  if (!part.memo) return byLiquid(part.node);
  const key = part.path.length ? keyOf(value) : "";
  const kept = key === UNKEPT ? undefined : part.memo.get(key);
  if (kept !== undefined) {
    part.hits += 1;
    return kept;
  }
  const text = byLiquid(part.node);
  part.misses += 1;
  if (key !== UNKEPT && plan.kept < PLAN_MEMO_MAX && text.length <= MEMO_TEXT_MAX) {
    part.memo.set(key, text);
    plan.kept += 1;
  }
  if (part.hits + part.misses >= MEMO_TRIAL && part.misses > part.hits) part.memo = null;
  return text;
}
