import crypto from "node:crypto";
import { compile as compileHtmlToText } from "html-to-text";
import juice from "juice";
import { LRUCache } from "lru-cache";
import {
  Liquid,
  type Context as LiquidContext,
  type Emitter,
  Tag,
  type TagToken,
  type Template,
  type TopLevelToken,
} from "liquidjs";
import type { FieldIssue } from "../../lib/errors";
import { planOf, renderPlan, TEXT_OF_HTML, type Plan } from "./render-plan";

/**
 * Rendering, pure: Liquid over the contract's variable namespace (sandboxed:
 * no files, bounded memory and time), MJML compiled at save, email HTML with
 * its CSS inlined and, when no text part is given, one that reads as the
 * rendered HTML does; the locale and A/B variant a contact gets.
 */

export type Content = Record<string, unknown>;

/** Wall-clock budget of one render (liquidjs `renderLimit`); a runaway template fails instead of holding a worker. */
const RENDER_LIMIT_MS = 250;
/** Allocation budget of one render or parse (liquidjs `memoryLimit`): bounds loops over huge ranges. */
const MEMORY_LIMIT = 10_000_000;
/** Parsed templates kept per process; a send renders the same few texts thousands of times. */
const PARSE_CACHE_SIZE = 2000;

/** Liquid may read no file: `include`, `render` and `layout` find nothing. */
const NO_FILES = {
  exists: async () => false,
  existsSync: () => false,
  readFile: async (file: string) => {
    throw new Error(`templates cannot read files (${file})`);
  },
  readFileSync: (file: string) => {
    throw new Error(`templates cannot read files (${file})`);
  },
  resolve: (_root: string, file: string) => file,
  contains: async () => false,
};

const DYNAMIC_TAG = /\{%-?\s*dynamic\s+["']([^"']{1,100})["']\s*-?%\}/g;

/** The slots a template's `{% dynamic "slot" %}` tags name, anywhere in its content, translations or variants. */
export function dynamicSlotsOf(source: unknown): string[] {
  const slots = new Set<string>();
  const visit = (value: unknown): void => {
    if (typeof value === "string") for (const m of value.matchAll(DYNAMIC_TAG)) slots.add(m[1]);
    else if (Array.isArray(value)) value.forEach(visit);
    else if (value && typeof value === "object") Object.values(value).forEach(visit);
  };
  visit(source);
  return [...slots];
}

/** `{% dynamic "slot" %}`: the slot's content chosen for the contact (`dynamic.<slot>` in the scope), else nothing. */
class DynamicTag extends Tag {
  private readonly slot: string;
  constructor(token: TagToken, remain: TopLevelToken[], liquid: Liquid) {
    super(token, remain, liquid);
    this.slot = token.args.trim().replace(/^["']|["']$/g, "");
  }
  *render(ctx: LiquidContext, emitter: Emitter): Generator<unknown, void, unknown> {
    const slots = (yield ctx.get(["dynamic"])) as Record<string, unknown> | undefined;
    const value = slots && Object.hasOwn(slots, this.slot) ? slots[this.slot] : "";
    emitter.write(typeof value === "string" ? value : "");
  }
}

/**
 * The text part of HTML: what a reader sees, headings as written
 * (html-to-text would upper-case them), images left out, each link's address
 * in brackets after its text (where the send's click tracking finds it).
 */
const htmlToText = compileHtmlToText({
  wordwrap: 78,
  selectors: [
    { selector: "img", format: "skip" },
    ...["h1", "h2", "h3", "h4", "h5", "h6"].map((selector) => ({ selector, options: { uppercase: false } })),
  ],
});

/** Texts of printed HTML made most recently (a slot's content, a variable with markup), by that HTML. */
const htmlTexts = new LRUCache<string, string>({ max: 500 });

function textOfHtml(html: string): string {
  let text = htmlTexts.get(html);
  if (text === undefined) {
    text = htmlToText(html);
    htmlTexts.set(html, text);
  }
  return text;
}

function newEngine(): Liquid {
  const engine = new Liquid({
    strictFilters: true,
    ownPropertyOnly: true,
    renderLimit: RENDER_LIMIT_MS,
    memoryLimit: MEMORY_LIMIT,
    parseLimit: MEMORY_LIMIT,
    fs: NO_FILES,
    root: [],
    partials: [],
    layouts: [],
    relativeReference: false,
    dynamicPartials: false,
    cache: false,
  });
  engine.registerTag("dynamic", DynamicTag);
  engine.registerFilter(TEXT_OF_HTML, (value: unknown) =>
    typeof value === "string" && /[<&]/.test(value) ? textOfHtml(value) : value,
  );
  return engine;
}

const engine = newEngine();
const parsed = new LRUCache<string, Template[]>({ max: PARSE_CACHE_SIZE });
/** Plans of the texts rendered most recently (render-plan.ts); a null plan: rendered whole. */
const plans = new LRUCache<string, { plan: Plan | null }>({ max: 200 });

function planFor(text: string): Plan | null {
  let kept = plans.get(text);
  if (!kept) plans.set(text, (kept = { plan: planOf(engine, parse(text)) }));
  return kept.plan;
}

function parse(text: string): Template[] {
  let templates = parsed.get(text);
  if (!templates) {
    templates = engine.parse(text);
    parsed.set(text, templates);
  }
  return templates;
}

/** A render or parse fault, with the field and line it names (400 `TEMPLATE_ERROR` at save, a failed message at send). */
export class TemplateFault extends Error {
  constructor(readonly details: Array<FieldIssue & { line?: number }>) {
    super(details.map((d) => `${d.field}: ${d.message}`).join("; "));
  }
}

function liquidIssue(field: string, err: unknown): FieldIssue & { line?: number } {
  const e = err as { message?: string; token?: { getPosition?: () => [number, number] } };
  const position = e.token?.getPosition?.();
  const message = String(e.message ?? err).replace(/, line:\d+, col:\d+$/, "");
  return position ? { field, message, line: position[0] } : { field, message };
}

/** Content fields taken as they are: the MJML source (compiled into `html`) and an email's attachments. */
const VERBATIM = new Set(["mjml", "attachments"]);

/** Every text of a content object that is Liquid, with its dotted field name. */
export function liquidFields(content: Content, prefix = "content"): Array<[string, string]> {
  const fields: Array<[string, string]> = [];
  const walk = (value: unknown, path: string) => {
    if (typeof value === "string") fields.push([path, value]);
    else if (Array.isArray(value)) value.forEach((item, i) => walk(item, `${path}[${i}]`));
    else if (value && typeof value === "object")
      for (const [key, inner] of Object.entries(value)) {
        // The MJML source is compiled into `html`, which is checked instead; attachments are files, not Liquid.
        if (!VERBATIM.has(key)) walk(inner, `${path}.${key}`);
      }
  };
  walk(content, prefix);
  return fields;
}

/** Parse every Liquid field; all faults at once. */
export function checkLiquid(content: Content, prefix = "content"): void {
  const issues: Array<FieldIssue & { line?: number }> = [];
  for (const [field, text] of liquidFields(content, prefix)) {
    try {
      parse(text);
    } catch (err) {
      issues.push(liquidIssue(field, err));
    }
  }
  if (issues.length) throw new TemplateFault(issues);
}

/** Compile an email's MJML source (`content.mjml`) into its `html`; MJML's own faults name their line. */
export async function compileMjml(content: Content, prefix = "content"): Promise<Content> {
  if (typeof content.mjml !== "string") return content;
  try {
    // Loaded on first use: only saves compile MJML, so a process that only sends never loads it.
    const { default: mjml2html } = await import("mjml");
    const result = await mjml2html(content.mjml, { validationLevel: "strict", keepComments: false });
    return { ...content, html: result.html };
  } catch (err) {
    const errors = (err as { errors?: Array<{ line: number; message: string }> }).errors;
    if (!errors?.length) throw new TemplateFault([{ field: `${prefix}.mjml`, message: String(err) }]);
    throw new TemplateFault(
      errors.map((e) => ({ field: `${prefix}.mjml`, message: e.message, line: e.line })),
    );
  }
}

/**
 * Render every Liquid text of `content` over `scope`; missing variables
 * render empty. Rendering is synchronous (liquidjs `renderSync`): no tag or
 * filter waits on anything, and the promise per token of the async renderer
 * cost more than the rendering itself. A text without tags goes by its plan
 * (render-plan.ts), which reuses what its shared outputs printed before.
 */
export async function renderContent(content: Content, scope: Record<string, unknown>): Promise<Content> {
  const render = (value: unknown, path: string): unknown => {
    if (typeof value === "string") {
      if (!value.includes("{")) return value;
      try {
        const plan = planFor(value);
        return plan
          ? renderPlan(engine, plan, scope, { length: MEMORY_LIMIT, ms: RENDER_LIMIT_MS })
          : engine.renderSync(parse(value), scope);
      } catch (err) {
        throw new TemplateFault([liquidIssue(path, err)]);
      }
    }
    if (Array.isArray(value)) return value.map((item, i) => render(item, `${path}[${i}]`));
    if (value && typeof value === "object") {
      const out: Content = {};
      for (const [key, inner] of Object.entries(value)) {
        out[key] = VERBATIM.has(key) ? inner : render(inner, `${path}.${key}`);
      }
      return out;
    }
    return value;
  };
  return render(content, "content") as Content;
}

/**
 * The variable namespace of a render: reserved names (`contact`, `event`,
 * `workspace`, `campaign`, `unsubscribeUrl`, `preferencesUrl`, `dynamic`)
 * win over the caller's `variables`, which sit at the top level.
 */
export function renderScope(
  reserved: {
    contact: Record<string, unknown>;
    workspace: { name: string; slug: string };
    event?: Record<string, unknown> | null;
    campaign?: { id: string; name: string } | null;
    unsubscribeUrl?: string;
    preferencesUrl?: string;
    dynamic?: Record<string, string>;
  },
  variables: Record<string, unknown> = {},
): Record<string, unknown> {
  const defaults = { event: null, campaign: null, unsubscribeUrl: "", preferencesUrl: "", dynamic: {} };
  // Object.assign is several times faster here than spreads (measured: 1.7 µs against 11 µs for 20
  // variables), but would call the `__proto__` setter for a variable of that name, which spreads define.
  if (Object.hasOwn(variables, "__proto__")) return { ...variables, ...defaults, ...reserved };
  return Object.assign({}, variables, defaults, reserved);
}

const LIQUID_TOKEN = /\{\{[\s\S]*?\}\}|\{%[\s\S]*?%\}/g;
/** A Liquid token's stand-in while the HTML is processed: private-use characters no parser splits or changes. */
const standIn = (n: number) => `\u{E000}${n}\u{E001}`;
const STAND_IN = /\u{E000}(\d+)\u{E001}/gu;

/**
 * Email sources already prepared, by their html, then their text: a send
 * renders the same template thousands of times (keyed by the strings
 * themselves, whose hashes V8 keeps, not a joined key made per message).
 */
const preparedEmails = new LRUCache<string, Map<string, { html: string | null; text: string }>>({
  maxSize: PARSE_CACHE_SIZE,
  sizeCalculation: (byText) => byText.size,
});

const OUTPUT_TOKEN = /^\{\{(-?)([\s\S]*?)(-?)\}\}$/;
const DYNAMIC_TOKEN = /^\{%-?\s*dynamic\s+["']([^"']{1,100})["']\s*-?%\}$/;

/**
 * A Liquid token of the HTML as the derived text part prints it: what it
 * prints into the HTML, as text (a variable or a dynamic content slot holding
 * markup or entities reads as the reader sees it). Other tags stay as they are.
 */
function asTextToken(token: string): string {
  const output = OUTPUT_TOKEN.exec(token);
  if (output && output[2].trim())
    return `{{${output[1]}${output[2].trimEnd()} | ${TEXT_OF_HTML} ${output[3]}}}`;
  const slot = DYNAMIC_TOKEN.exec(token);
  return slot ? `{{ dynamic["${slot[1]}"] | ${TEXT_OF_HTML} }}` : token;
}

/**
 * An email's source as mail clients want it, prepared once per template
 * text rather than once per message: CSS inlined (juice) and, when none is
 * given, a text part derived from the HTML (html-to-text), both still Liquid.
 * Each Liquid token travels through the HTML tools as an opaque stand-in and
 * is put back after, so neither tool can split or alter it; in the text part
 * each output prints the text of what it prints into the HTML, so the text
 * part reads as the rendered HTML does without deriving it per message.
 */
export function prepareEmail(content: Content): Content {
  const html = typeof content.html === "string" && content.html ? content.html : null;
  const given = typeof content.text === "string" && content.text.length ? content.text : null;
  let byText = preparedEmails.get(html ?? "");
  let prepared = byText?.get(given ?? "");
  if (!prepared) {
    if (!html) prepared = { html: null, text: given ?? "" };
    else {
      const tokens: string[] = [];
      const masked = html.replace(LIQUID_TOKEN, (token) => standIn(tokens.push(token) - 1));
      const inlined = juice(masked, { removeStyleTags: false, preserveMediaQueries: true });
      // Inside `{% raw %}` an output is text to print, not one to convert.
      const raw = /\{%-?\s*raw\b/.test(html);
      prepared = {
        html: inlined.replace(STAND_IN, (_, n: string) => tokens[Number(n)] ?? ""),
        text:
          given ??
          htmlToText(inlined).replace(STAND_IN, (_, n: string) => {
            const token = tokens[Number(n)] ?? "";
            return raw ? token : asTextToken(token);
          }),
      };
    }
    byText ??= new Map();
    byText.set(given ?? "", prepared);
    // Set again: the html's entry is sized by the texts it holds.
    preparedEmails.set(html ?? "", byText);
  }
  return { ...content, ...prepared };
}

/**
 * A rendered email's last step: the text part without the blanks an empty variable leaves at a
 * line's end, and the preheader, escaped and hidden, first in the body.
 */
export function finishEmail(rendered: Content): Content {
  const text =
    typeof rendered.text === "string" ? rendered.text.replace(/[ \t]+$/gm, "").trim() : rendered.text;
  const html = typeof rendered.html === "string" && rendered.html ? rendered.html : null;
  const preheader = typeof rendered.preheader === "string" ? rendered.preheader.trim() : "";
  if (!html || !preheader) return { ...rendered, text };
  const hidden = `<div style="display:none;max-height:0;overflow:hidden;mso-hide:all">${escapeHtml(preheader)}</div>`;
  return {
    ...rendered,
    text,
    html: /<body[^>]*>/i.test(html)
      ? html.replace(/<body[^>]*>/i, (tag) => `${tag}${hidden}`)
      : `${hidden}${html}`,
  };
}

export function escapeHtml(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] as string,
  );
}

/** Contract 2: a partial content over a base, key by key. */
export const overlay = (base: Content, partial: Content | undefined | null): Content =>
  partial ? { ...base, ...partial } : base;

/** The translation a contact reads: its locale, its language, the workspace default, else the base. */
export function pickLocale(
  baseLocale: string,
  available: string[],
  contactLocale: string | null | undefined,
  defaultLocale: string,
): string {
  const candidates = [contactLocale, contactLocale?.split(/[-_]/)[0], defaultLocale].filter(
    (c): c is string => typeof c === "string" && c.length > 0,
  );
  for (const candidate of candidates) {
    if (candidate.toLowerCase() === baseLocale.toLowerCase()) return baseLocale;
    const match = available.find((l) => l.toLowerCase() === candidate.toLowerCase());
    if (match) return match;
  }
  return baseLocale;
}

export interface Variant {
  id: string;
  weight: number;
  content?: Content;
}

/**
 * The variant a contact gets (contract 2): SHA-256 of `<templateId>:<contactId>`,
 * its first 4 bytes as an unsigned integer mod 100, placed on the cumulative
 * weights. The same contact always gets the same variant; a fixed winner wins.
 */
export function pickVariant(
  templateId: string,
  contactId: string,
  variants: Variant[],
  winner?: string | null,
): string | null {
  if (!variants.length) return null;
  if (winner && variants.some((v) => v.id === winner)) return winner;
  const bucket =
    crypto.createHash("sha256").update(`${templateId}:${contactId}`).digest().readUInt32BE(0) % 100;
  let cumulative = 0;
  for (const variant of variants) {
    cumulative += variant.weight;
    if (bucket < cumulative) return variant.id;
  }
  return variants[variants.length - 1].id;
}
