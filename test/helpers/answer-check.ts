import Ajv from "ajv";
import addFormats from "ajv-formats";
import { schemaIssues } from "../../lib/schema";

/**
 * Every answer an integration test receives through the gateway is checked
 * against what `GET /api/openapi` declares for its operation and status, so
 * the document cannot drift from the code: a status below 500 must be
 * declared (itself, as `4XX` or as `default`), and a JSON body must match
 * its schema. Operations whose success schema is still the untyped `{}`
 * (areas not yet on TypeBox) are checked for errors only. Every moment in an
 * answer is written one way, the contract's ISO 8601 UTC with milliseconds
 * and `Z`: a declared date-time in another form fails, and so does a string
 * anywhere that has the form jsonb gives a timestamptz (`+00:00`,
 * microseconds), declared or not.
 */

interface Operation {
  responses?: Record<string, { content?: Record<string, { schema?: Record<string, unknown> }> }>;
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
  components?: Record<string, unknown>;
}
interface Route {
  template: string;
  pattern: RegExp;
  params: number;
  methods: Record<string, Operation>;
}

const routesByBase = new Map<string, Promise<{ doc: Document; routes: Route[] } | null>>();

function load(baseUrl: string) {
  let loaded = routesByBase.get(baseUrl);
  if (!loaded) {
    loaded = fetch(`${baseUrl}/api/openapi`)
      .then(async (res) => (res.ok ? ((await res.json()) as Document) : null))
      .then((doc) => {
        if (!doc) return null;
        const routes = Object.entries(doc.paths).map(([template, methods]) => ({
          template,
          pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, "[^/]+")}$`),
          params: (template.match(/\{/g) ?? []).length,
          methods,
        }));
        // A literal segment wins over a parameter (`/contacts/dnc` before `/contacts/{contactId}`).
        routes.sort((a, b) => a.params - b.params);
        return { doc, routes };
      })
      .catch(() => null);
    routesByBase.set(baseUrl, loaded);
  }
  return loaded;
}

const schemaCache = new WeakMap<object, Record<string, unknown>>();

/** The response schema, with the document's components beside it so `#/components/...` refs resolve. */
function rooted(schema: Record<string, unknown>, doc: Document): Record<string, unknown> {
  let wrapped = schemaCache.get(schema);
  if (!wrapped) {
    wrapped = { allOf: [schema], components: doc.components };
    schemaCache.set(schema, wrapped);
  }
  return wrapped;
}

function responseSchema(operation: Operation, status: number): Record<string, unknown> | undefined {
  const responses = operation.responses ?? {};
  const declared = responses[String(status)] ?? responses[`${String(status)[0]}XX`];
  return declared?.content?.["application/json"]?.schema;
}

/** The one form of a moment in an answer. */
export const API_MOMENT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
/** A moment with an offset, as PostgreSQL writes a timestamptz into JSON: never what the API answers. */
const OFFSET_MOMENT = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?[+-]\d{2}(:\d{2})?$/;

/** The answer schemas again, with `date-time` meaning exactly API_MOMENT. */
const momentAjv = addFormats(new Ajv({ allErrors: true, strict: false }));
momentAjv.addFormat("date-time", API_MOMENT);
const momentValidators = new WeakMap<object, ReturnType<typeof momentAjv.compile>>();

/** Date-time fields of the answer not written as API_MOMENT, and offset-form moments anywhere in it. */
export function momentIssues(schema: Record<string, unknown> | undefined, body: unknown): string[] {
  const issues: string[] = [];
  if (schema) {
    let validate = momentValidators.get(schema);
    if (!validate) {
      validate = momentAjv.compile(schema);
      momentValidators.set(schema, validate);
    }
    if (!validate(body))
      for (const error of validate.errors ?? [])
        if (error.keyword === "format" && error.params.format === "date-time")
          issues.push(`${error.instancePath || "(answer)"} is not ISO 8601 UTC with milliseconds and Z`);
  }
  const walk = (value: unknown, path: string) => {
    if (typeof value === "string") {
      if (OFFSET_MOMENT.test(value))
        issues.push(`${path || "(answer)"} is a moment with an offset (${value})`);
    } else if (Array.isArray(value)) value.forEach((item, i) => walk(item, `${path}/${i}`));
    else if (value && typeof value === "object")
      for (const [key, item] of Object.entries(value)) walk(item, `${path}/${key}`);
  };
  walk(body, "");
  return [...new Set(issues)];
}

const isTyped = (schema: Record<string, unknown> | undefined) => !!schema && Object.keys(schema).length > 0;

/** Whether the operation declares `status`: itself, its class (`4XX`) or `default`. */
const declares = (operation: Operation, status: number) =>
  [String(status), `${String(status)[0]}XX`, "default"].some((code) => code in (operation.responses ?? {}));

/** The operation `GET /api/...` (query ignored) falls under, if the description has one. */
async function operationOf(baseUrl: string, method: string, url: string) {
  const path = url.split("?")[0];
  if (!path.startsWith("/api/")) return null;
  const loaded = await load(baseUrl);
  const route = loaded?.routes.find((candidate) => candidate.pattern.test(path));
  const operation = route?.methods[method.toLowerCase()];
  return loaded && route && operation ? { operation, doc: loaded.doc, path, template: route.template } : null;
}

/** `METHOD /api/path/{param} → status` when the operation does not declare that status, else null. */
export async function undeclaredStatus(
  baseUrl: string,
  method: string,
  url: string,
  status: number,
): Promise<string | null> {
  const found = await operationOf(baseUrl, method, url);
  if (!found || declares(found.operation, status)) return null;
  return `${method} ${found.template} → ${status}`;
}

/** Throws when an answer does not match its operation's declaration. */
export async function checkAnswer(
  baseUrl: string,
  method: string,
  url: string,
  status: number,
  contentType: string,
  body: unknown,
): Promise<void> {
  const found = await operationOf(baseUrl, method, url);
  if (!found) return;
  const { operation, doc, path } = found;
  // A 5xx is a failure, not an answer: the tests that provoke one assert it themselves.
  if (status < 500 && !declares(operation, status))
    throw new Error(`${method} ${path} answered ${status}, a status its description does not declare`);
  if (!contentType.includes("json")) return;
  const schema = responseSchema(operation, status);
  const moments = momentIssues(isTyped(schema) ? rooted(schema!, doc) : undefined, body);
  if (moments.length)
    throw new Error(
      `${method} ${path} answered ${status} with moments in another form: ${moments.join("; ")}`,
    );
  if (status < 300) {
    const typedSuccess = Object.entries(operation.responses ?? {}).find(
      ([code, response]) => code.startsWith("2") && isTyped(response.content?.["application/json"]?.schema),
    );
    if (!typedSuccess) return;
    if (!schema)
      throw new Error(`${method} ${path} answered ${status}; the description declares ${typedSuccess[0]}`);
  }
  if (!isTyped(schema)) return;
  const issues = schemaIssues(rooted(schema!, doc), body);
  if (issues.length) {
    const list = issues.map((issue) => `${issue.field || "(answer)"} ${issue.message}`).join("; ");
    throw new Error(
      `${method} ${path} answered ${status} with a body its description does not allow: ${list}`,
    );
  }
}
