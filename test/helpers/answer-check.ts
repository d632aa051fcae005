import { schemaIssues } from "../../lib/schema";

/**
 * Every answer an integration test receives through the gateway is checked
 * against what `GET /api/openapi` declares for its operation and status, so
 * the document cannot drift from the code: a status below 500 must be
 * declared (itself, as `4XX` or as `default`), and a JSON body must match
 * its schema.
 * Operations whose success schema is still the untyped `{}` (areas not yet
 * on TypeBox) are checked for errors only.
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
