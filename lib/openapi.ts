import { VERSION } from "./paths";
import { COMPONENT_KEY, isJsonSchema } from "./schema";

/**
 * OpenAPI 3.1 generated from the registry: every action with a `rest`
 * route becomes an operation, its TypeBox params and result (JSON Schema)
 * its request and answers, its `auth` the security requirement. The description is
 * built from the same declarations the gateway routes by, so it cannot drift.
 */

export type JsonSchema = Record<string, unknown>;

interface RegistryAction {
  name: string;
  rest?: string | string[] | { method?: string; path?: string };
  params?: JsonSchema;
  /** TypeBox actions: the success answer's schema and status (lib/define-service.ts). */
  result?: JsonSchema;
  status?: number;
  /** Other success answers the handler may choose (a 202 job for large work), by status. */
  alsoAnswers?: Record<string, JsonSchema>;
  auth?: string;
  permission?: string;
  role?: string;
  keyScope?: string;
  openapi?: Record<string, unknown> & {
    summary?: string;
    tags?: string[];
    responses?: Record<string, unknown>;
    failures?: number[];
  };
  [key: string]: unknown;
}

interface RegistryService {
  name: string;
  settings?: { rest?: string };
  actions?: Record<string, RegistryAction>;
}

const ERROR_RESPONSE = { $ref: "#/components/responses/Error" };

function restRoutes(rest: RegistryAction["rest"]): Array<{ method: string; path: string }> {
  const list = Array.isArray(rest) ? rest : rest ? [rest] : [];
  return list.map((entry) => {
    if (typeof entry === "string") {
      const [method, routePath] = entry.includes(" ") ? entry.split(/\s+/) : ["*", entry];
      return { method, path: routePath };
    }
    return { method: entry.method ?? "*", path: entry.path ?? "" };
  });
}

function joinPath(base: string | undefined, routePath: string): string {
  const joined = `/api/${base ?? ""}/${routePath}`.replace(/\/+/g, "/").replace(/\/$/, "");
  return joined.replace(/:([A-Za-z0-9_]+)/g, "{$1}");
}

/** Who may call an action, in words, from the same declarations the Authorize middleware enforces. */
export function accessSentence(
  action: Pick<RegistryAction, "auth" | "permission" | "role" | "keyScope">,
): string {
  const auth = action.auth ?? "any";
  if (auth === "public") return "Public: no credential needed.";
  if (auth === "cron") return "Needs `Authorization: Bearer <CRON_SECRET>`.";
  const who = auth === "session" ? "a signed-in session" : "a signed-in session or an API key";
  const role =
    action.role === "ADMIN"
      ? ` with the OWNER or ADMIN role`
      : action.role === "MEMBER"
        ? ` with any role but VIEWER`
        : "";
  const permission = action.permission
    ? `; the member's role, or the API key's scopes, must cover \`${action.permission}\``
    : action.keyScope
      ? `; any member's session, or an API key whose scopes cover \`${action.keyScope}\``
      : "";
  return `Needs ${who}${role}${permission}.`;
}

/** Path, query and body of an operation from a TypeBox (JSON Schema) params object. */
function jsonSchemaRequest(params: JsonSchema, pathParams: string[], hasBody: boolean) {
  const properties = (params.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((params.required as string[] | undefined) ?? []);
  const parameters: JsonSchema[] = [];
  const body: Record<string, JsonSchema> = {};
  for (const [name, schema] of Object.entries(properties)) {
    if (pathParams.includes(name)) parameters.push({ name, in: "path", required: true, schema });
    else if (hasBody) body[name] = schema;
    else parameters.push({ name, in: "query", required: required.has(name), schema });
  }
  for (const name of pathParams) {
    if (!(name in properties))
      parameters.push({ name, in: "path", required: true, schema: { type: "string" } });
  }
  const bodyRequired = [...required].filter((name) => name in body);
  const bodySchema: JsonSchema = { type: "object", properties: body };
  if (bodyRequired.length) bodySchema.required = bodyRequired;
  return { parameters, bodySchema: Object.keys(body).length ? bodySchema : undefined };
}

function successResponses(action: RegistryAction, method: string): JsonSchema {
  if (action.result) {
    const status = String(action.status ?? 200);
    const answers: JsonSchema = {
      [status]: { description: "Success", content: { "application/json": { schema: action.result } } },
    };
    for (const [other, schema] of Object.entries(action.alsoAnswers ?? {})) {
      answers[other] = {
        description: other === "202" ? "Accepted: the work runs as a job" : "Success",
        content: { "application/json": { schema } },
      };
    }
    return { ...answers, "4XX": ERROR_RESPONSE };
  }
  // Every action with a route declares its result (or its own `openapi.responses`); this is only a floor.
  return {
    [method === "POST" ? "201" : "200"]: { description: "Success" },
    "4XX": ERROR_RESPONSE,
  };
}

/**
 * An action's own answers, with the gateway's refusals (400 invalid params,
 * 401, 403, 404, 429) as the error body unless it names its 4xx answers
 * another way: any route may answer them.
 */
function withRefusals(responses: Record<string, unknown>): Record<string, unknown> {
  return "4XX" in responses ? responses : { ...responses, "4XX": ERROR_RESPONSE };
}

function operationFor(action: RegistryAction, method: string, fullPath: string): JsonSchema {
  const pathParams = [...fullPath.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
  const hasBody = ["POST", "PUT", "PATCH"].includes(method);
  const { parameters, bodySchema } = jsonSchemaRequest(
    isJsonSchema(action.params) ? action.params : {},
    pathParams,
    hasBody,
  );
  const auth = action.auth ?? "any";
  const security =
    auth === "public"
      ? []
      : auth === "session"
        ? [{ sessionCookie: [] }]
        : auth === "cron"
          ? [{ cronSecret: [] }]
          : [{ sessionCookie: [] }, { bearerApiKey: [] }];
  const {
    summary,
    description,
    tags,
    responses,
    failures,
    requestBody,
    parameters: headers,
    ...rest
  } = action.openapi ?? {};
  const answers = responses ? withRefusals(responses) : successResponses(action, method);
  for (const status of failures ?? []) answers[String(status)] = ERROR_RESPONSE;
  const operation: JsonSchema = {
    operationId: `${action.name}${method === "*" ? "" : `.${method.toLowerCase()}`}`,
    summary: summary ?? action.name,
    description: [description, accessSentence(action)].filter(Boolean).join("\n\n"),
    tags: tags ?? [action.name.split(".")[0]],
    security,
    parameters: [...parameters, ...((headers as JsonSchema[] | undefined) ?? [])],
    responses: answers,
    ...rest,
  };
  if (action.permission) operation["x-permission"] = action.permission;
  if (action.role) operation["x-role"] = action.role;
  if (requestBody) operation.requestBody = requestBody;
  else if (hasBody && bodySchema) {
    operation.requestBody = { required: true, content: { "application/json": { schema: bodySchema } } };
  }
  return operation;
}

/**
 * Shapes marked as components (lib/schema.ts `Component`) move to
 * `components.schemas` and are referenced, so a client generator names them once.
 */
function hoistComponents(node: unknown, components: Record<string, JsonSchema>): unknown {
  if (Array.isArray(node)) return node.map((item) => hoistComponents(item, components));
  if (typeof node !== "object" || node === null) return node;
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(node)) {
    if (key !== COMPONENT_KEY) out[key] = hoistComponents(value, components);
  }
  const name = (node as JsonSchema)[COMPONENT_KEY];
  if (typeof name !== "string") return out;
  components[name] ??= out;
  return { $ref: `#/components/schemas/${name}` };
}

const tagsOf = (operation: JsonSchema) => (operation.tags as string[] | undefined) ?? [];

export function buildOpenApi(services: unknown[], serverUrl: string): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  const seen = new Set<string>();
  const operationIds = new Set<string>();
  for (const service of services as RegistryService[]) {
    if (seen.has(service.name)) continue;
    seen.add(service.name);
    for (const action of Object.values(service.actions ?? {})) {
      for (const route of restRoutes(action.rest)) {
        const fullPath = joinPath(service.settings?.rest ?? service.name, route.path);
        const methods = route.method === "*" ? ["GET", "POST"] : [route.method.toUpperCase()];
        for (const method of methods) {
          const operation = operationFor(action, method, fullPath);
          // operationId must be unique: an action with several routes numbers the later ones.
          const base = String(operation.operationId);
          let id = base;
          for (let n = 2; operationIds.has(id); n++) id = `${base}.${n}`;
          operationIds.add(id);
          operation.operationId = id;
          paths[fullPath] ??= {};
          paths[fullPath][method.toLowerCase()] = operation;
        }
      }
    }
  }
  const schemas: Record<string, JsonSchema> = {};
  const sorted = hoistComponents(
    Object.fromEntries(Object.entries(paths).sort(([a], [b]) => a.localeCompare(b))),
    schemas,
  );
  // The reference lists its groups in this order: alphabetical, not the order the services load in.
  const tags = [
    ...new Set(
      Object.values(paths)
        .flatMap((item) => Object.values(item))
        .flatMap(tagsOf),
    ),
  ];
  return {
    openapi: "3.1.0",
    info: { title: "Campaign Messaging Service API", version: VERSION },
    servers: [{ url: serverUrl }],
    tags: tags.sort((a, b) => a.localeCompare(b, "en")).map((name) => ({ name })),
    paths: sorted,
    components: {
      schemas,
      securitySchemes: {
        sessionCookie: {
          type: "apiKey",
          in: "cookie",
          name: `${serverUrl.startsWith("https://") ? "__Secure-" : ""}next-auth.session-token`,
        },
        bearerApiKey: { type: "http", scheme: "bearer", bearerFormat: "svc_ API key" },
        cronSecret: {
          type: "http",
          scheme: "bearer",
          description: "CRON_SECRET, for GET /api/cron/tick only",
        },
      },
      responses: {
        Error: {
          description: "Error",
          content: {
            "application/json": {
              schema: {
                type: "object",
                required: ["error", "code"],
                properties: {
                  error: { type: "string" },
                  code: { type: "string" },
                  details: {
                    type: "array",
                    items: {
                      type: "object",
                      properties: {
                        field: { type: "string" },
                        message: { type: "string" },
                        line: { type: "integer", description: "TEMPLATE_ERROR: the template's line" },
                      },
                    },
                  },
                },
              },
            },
          },
        },
      },
    },
  };
}
