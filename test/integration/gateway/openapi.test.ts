import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { undeclaredStatus } from "../../helpers/answer-check";
import { startApp, type TestApp } from "../../helpers/app";
import { ownerWithWorkspace } from "../../helpers/http";

/**
 * GET /api/openapi against the running gateway: a structurally valid
 * OpenAPI 3.1.0 document that describes every route the gateway serves
 * (compared with moleculer-web's registered aliases), and nothing else.
 */
let app: TestApp;
let doc: any;

interface GatewayAlias {
  method: string;
  fullPath: string;
  action: string | null;
  route: { opts: { name?: string } };
}

beforeAll(async () => {
  app = await startApp(); // every service: every route must be described
  const res = await app.http().get("/api/openapi");
  expect(res.status).toBe(200);
  doc = res.body;
});
afterAll(() => app.stop());

const HTTP_METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];
const JSON_TYPES = ["string", "number", "integer", "boolean", "object", "array", "null"];

function apiAliases(): GatewayAlias[] {
  const api = app.broker.getLocalService("api") as unknown as { aliases: GatewayAlias[] };
  return api.aliases.filter((alias) => alias.route.opts.name === "api" && alias.action);
}

const toOpenApiPath = (fullPath: string) => fullPath.replace(/:([A-Za-z0-9_]+)/g, "{$1}");

function operations(): Array<{ path: string; method: string; op: any }> {
  return Object.entries(doc.paths).flatMap(([path, item]: [string, any]) =>
    Object.entries(item)
      .filter(([method]) => HTTP_METHODS.includes(method))
      .map(([method, op]) => ({ path, method, op })),
  );
}

/** Walk a JSON Schema and report anything JSON Schema 2020-12 would not accept. */
function checkSchema(schema: any, where: string, problems: string[]) {
  if (schema === true || schema === false) return;
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) {
    problems.push(`${where}: schema is not an object`);
    return;
  }
  if (schema.$ref) return;
  const types = Array.isArray(schema.type) ? schema.type : schema.type === undefined ? [] : [schema.type];
  for (const type of types) if (!JSON_TYPES.includes(type)) problems.push(`${where}: unknown type ${type}`);
  if (schema.required !== undefined) {
    if (!Array.isArray(schema.required)) problems.push(`${where}: required is not an array`);
    else
      for (const name of schema.required)
        if (!schema.properties || !(name in schema.properties))
          problems.push(`${where}: required ${name} not in properties`);
  }
  for (const key of ["minLength", "maxLength", "minItems", "maxItems"]) {
    if (schema[key] !== undefined && !(Number.isInteger(schema[key]) && schema[key] >= 0))
      problems.push(`${where}: ${key} must be a non-negative integer`);
  }
  if (schema.enum !== undefined && !Array.isArray(schema.enum))
    problems.push(`${where}: enum is not an array`);
  for (const [name, sub] of Object.entries(schema.properties ?? {}))
    checkSchema(sub, `${where}.properties.${name}`, problems);
  if (schema.items !== undefined) checkSchema(schema.items, `${where}.items`, problems);
  for (const key of ["anyOf", "oneOf", "allOf", "prefixItems"]) {
    for (const [i, sub] of (schema[key] ?? []).entries()) checkSchema(sub, `${where}.${key}[${i}]`, problems);
  }
  if (typeof schema.additionalProperties === "object")
    checkSchema(schema.additionalProperties, `${where}.additionalProperties`, problems);
}

function resolveRef(ref: string): unknown {
  expect(ref.startsWith("#/")).toBe(true);
  return ref
    .slice(2)
    .split("/")
    .reduce(
      (node: any, part) =>
        node === undefined ? undefined : node[part.replace(/~1/g, "/").replace(/~0/g, "~")],
      doc,
    );
}

function collectRefs(node: unknown, found: string[] = []): string[] {
  if (Array.isArray(node)) node.forEach((n) => collectRefs(n, found));
  else if (node && typeof node === "object") {
    for (const [key, value] of Object.entries(node)) {
      if (key === "$ref" && typeof value === "string") found.push(value);
      else collectRefs(value, found);
    }
  }
  return found;
}

test("is an OpenAPI 3.1.0 document with info, servers and paths", () => {
  expect(doc.openapi).toBe("3.1.0");
  expect(typeof doc.info.title).toBe("string");
  expect(doc.info.version).toBe(require("../../../package.json").version);
  expect(doc.servers).toEqual([{ url: expect.stringMatching(/^https?:\/\//) }]);
  expect(Object.keys(doc.paths).length).toBeGreaterThan(10);
  for (const path of Object.keys(doc.paths)) {
    expect(path).toMatch(/^\/api\//);
    expect(path).not.toMatch(/:[A-Za-z]/); // {param} syntax, not :param
    expect(path).not.toMatch(/\/$/);
  }
});

test("validates against the official OpenAPI 3.1 schema (@seriousme/openapi-schema-validator)", async () => {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "openapi-")), "openapi.json");
  fs.writeFileSync(file, JSON.stringify(doc));
  // Its command line: the package is ESM only, which jest's CommonJS runtime cannot import.
  const cli = require.resolve("@seriousme/openapi-schema-validator/bin/validate-api-cli.js");
  const { stdout } = await promisify(execFile)(process.execPath, [cli, file]).catch(
    (err: { stdout: string }) => err,
  );
  expect(JSON.parse(stdout)).toEqual({ valid: true });
});

test("lists every operation's tag once, alphabetically (the reference's groups in that order)", () => {
  const names = doc.tags.map((tag: { name: string }) => tag.name);
  const used = [...new Set(operations().flatMap(({ op }) => op.tags as string[]))];
  expect(names.length).toBeGreaterThan(20);
  expect([...names].sort()).toEqual([...used].sort());
  const disorder = names.filter(
    (name: string, i: number) => i > 0 && names[i - 1].toLowerCase() > name.toLowerCase(),
  );
  expect(disorder).toEqual([]);
});

test("security schemes: the NextAuth session cookie and bearer API keys", () => {
  expect(doc.components.securitySchemes.sessionCookie).toEqual({
    type: "apiKey",
    in: "cookie",
    name: "next-auth.session-token",
  });
  expect(doc.components.securitySchemes.bearerApiKey).toMatchObject({ type: "http", scheme: "bearer" });
  const names = Object.keys(doc.components.securitySchemes);
  for (const { path, method, op } of operations()) {
    expect(Array.isArray(op.security)).toBe(true);
    for (const requirement of op.security) {
      for (const [name, scopes] of Object.entries(requirement)) {
        expect([path, method, names.includes(name)]).toEqual([path, method, true]);
        expect(scopes).toEqual([]);
      }
    }
  }
  expect(doc.paths["/api/health"].get.security).toEqual([]);
  expect(doc.paths["/api/workspaces"].get.security).toEqual([{ sessionCookie: [] }]);
  expect(doc.paths["/api/workspaces/{workspaceId}"].get.security).toEqual([
    { sessionCookie: [] },
    { bearerApiKey: [] },
  ]);
});

test("every operation is well formed: unique operationId, responses, declared path parameters, valid schemas", () => {
  const ids = new Set<string>();
  const problems: string[] = [];
  for (const { path, method, op } of operations()) {
    const where = `${method.toUpperCase()} ${path}`;
    if (typeof op.operationId !== "string" || ids.has(op.operationId))
      problems.push(`${where}: operationId ${op.operationId} missing or duplicate`);
    ids.add(op.operationId);
    if (!op.responses || !Object.keys(op.responses).length) problems.push(`${where}: no responses`);
    for (const code of Object.keys(op.responses ?? {}))
      if (!/^([1-5]\d\d|[1-5]XX|default)$/.test(code)) problems.push(`${where}: response key ${code}`);
    const templated = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]).sort();
    const params: any[] = op.parameters ?? [];
    const declared = params
      .filter((p) => p.in === "path")
      .map((p) => p.name)
      .sort();
    if (JSON.stringify(templated) !== JSON.stringify(declared))
      problems.push(`${where}: path params ${declared} != ${templated}`);
    const keys = params.map((p) => `${p.in}:${p.name}`);
    if (new Set(keys).size !== keys.length) problems.push(`${where}: duplicate parameters`);
    for (const p of params) {
      if (!["path", "query", "header", "cookie"].includes(p.in))
        problems.push(`${where}: parameter ${p.name} in ${p.in}`);
      if (p.in === "path" && p.required !== true)
        problems.push(`${where}: path parameter ${p.name} not required`);
      checkSchema(p.schema, `${where} parameter ${p.name}`, problems);
    }
    if (op.requestBody) {
      if (!op.requestBody.content || !Object.keys(op.requestBody.content).length)
        problems.push(`${where}: requestBody without content`);
      for (const [type, media] of Object.entries<any>(op.requestBody.content ?? {})) {
        if (media.schema) checkSchema(media.schema, `${where} body ${type}`, problems);
      }
    }
  }
  expect(problems).toEqual([]);
});

test("every operation has a human summary and a description saying who may call it", () => {
  const missing: string[] = [];
  for (const { path, method, op } of operations()) {
    const actionName = String(op.operationId).replace(/\.(get|post|put|patch|delete)$/, "");
    if (!op.summary || op.summary === actionName)
      missing.push(`${method.toUpperCase()} ${path} (${actionName})`);
    if (!op.description) missing.push(`${method.toUpperCase()} ${path}: no description`);
  }
  expect(missing).toEqual([]);
});

test("every operation declares a typed success answer (a JSON schema, another content type, or a redirect)", () => {
  const untyped: string[] = [];
  for (const { path, method, op } of operations()) {
    const successes = Object.entries<any>(op.responses ?? {}).filter(([code]) => /^[23]/.test(code));
    const typed = successes.some(([code, response]) => {
      if (code.startsWith("3")) return Boolean(response.headers?.Location);
      const content = response.content ?? {};
      const json = content["application/json"]?.schema;
      return (
        Object.keys(content).some((type) => type !== "application/json") ||
        (json && Object.keys(json).length > 0)
      );
    });
    // NextAuth's catch-all exists to refuse: it declares its 400 and nothing else.
    const onlyRefuses =
      successes.length === 0 && Object.keys(op.responses ?? {}).every((code) => code.startsWith("4"));
    if (!typed && !onlyRefuses) untyped.push(`${method.toUpperCase()} ${path}`);
  }
  expect(untyped).toEqual([]);
});

test("every $ref resolves", () => {
  const refs = collectRefs(doc);
  expect(refs.length).toBeGreaterThan(0);
  for (const ref of refs) expect([ref, resolveRef(ref) !== undefined]).toEqual([ref, true]);
});

test("every route the gateway serves is described, and nothing else", () => {
  const aliases = apiAliases();
  expect(aliases.length).toBeGreaterThan(10);
  const missing: string[] = [];
  for (const alias of aliases) {
    const path = toOpenApiPath(alias.fullPath);
    const methods = alias.method === "*" ? ["get", "post"] : [alias.method.toLowerCase()];
    for (const method of methods)
      if (!doc.paths[path]?.[method]) missing.push(`${method.toUpperCase()} ${path} (${alias.action})`);
  }
  expect(missing).toEqual([]);

  const served = new Set(
    aliases.flatMap((a) =>
      (a.method === "*" ? ["get", "post"] : [a.method.toLowerCase()]).map(
        (m) => `${m} ${toOpenApiPath(a.fullPath)}`,
      ),
    ),
  );
  const phantom = operations()
    .map(({ path, method }) => `${method} ${path}`)
    .filter((key) => !served.has(key));
  expect(phantom).toEqual([]);
});

test("the routes of the sign-in and gateway area are there with their bodies", () => {
  expect(doc.paths["/api/auth/register"].post.requestBody.content["application/json"].schema).toMatchObject({
    type: "object",
    required: expect.arrayContaining(["name", "email", "password"]),
  });
  for (const [path, method] of [
    ["/api/auth/csrf", "get"],
    ["/api/auth/session", "get"],
    ["/api/auth/providers", "get"],
    ["/api/auth/callback/{provider}", "post"],
    ["/api/auth/signout", "post"],
    ["/api/auth/forgot-password", "post"],
    ["/api/auth/reset-password", "post"],
    ["/api/health", "get"],
    ["/api/openapi", "get"],
  ]) {
    expect([path, method, Boolean(doc.paths[path]?.[method])]).toEqual([path, method, true]);
  }
});

test("the internal actions are not described", () => {
  const ids = operations().map(({ op }) => op.operationId as string);
  for (const internal of ["auth.verifyApiKey", "auth.touchApiKey", "auth.signinPage", "api.docs"]) {
    expect(ids.some((id) => id.startsWith(`${internal}.`) || id === internal)).toBe(false);
  }
});

test("/api/docs serves Swagger UI over the description", async () => {
  const res = await app.http().get("/api/docs");
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/html/);
  expect(res.text).toContain("/api/docs/assets/swagger-ui-bundle.js");
  const script = await app.http().get("/docs.js");
  expect(script.status).toBe(200);
  expect(script.text).toContain('url: "/api/openapi"');
});

/**
 * Where a request schema holds a list without maxItems: the gateway refuses
 * a list past its maxItems before looking at its items (lib/schema.ts
 * `oversizedInput`), so a list without one would be validated item by item
 * whatever its length. Objects need no declaration: MAX_OBJECT_KEYS holds
 * those without maxProperties.
 */
function unboundedLists(schema: any, where: string, found: string[], seen = new Set<unknown>()) {
  if (!schema || typeof schema !== "object" || seen.has(schema)) return;
  seen.add(schema);
  if (schema.$ref) return unboundedLists(resolveRef(schema.$ref), where, found, seen);
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  if (types.includes("array") && schema.maxItems === undefined) found.push(where);
  for (const [name, sub] of Object.entries(schema.properties ?? {}))
    unboundedLists(sub, `${where}.${name}`, found, seen);
  for (const sub of Object.values(schema.patternProperties ?? {}))
    unboundedLists(sub, `${where}.*`, found, seen);
  if (typeof schema.additionalProperties === "object")
    unboundedLists(schema.additionalProperties, `${where}.*`, found, seen);
  if (schema.items !== undefined) unboundedLists(schema.items, `${where}[]`, found, seen);
  for (const key of ["anyOf", "oneOf", "allOf", "prefixItems"])
    for (const sub of schema[key] ?? []) unboundedLists(sub, where, found, seen);
}

test("every list a request may send declares its maxItems", () => {
  const found: string[] = [];
  for (const { path, method, op } of operations()) {
    const where = `${method.toUpperCase()} ${path}`;
    for (const p of op.parameters ?? []) unboundedLists(p.schema, `${where} ${p.name}`, found);
    for (const media of Object.values<any>(op.requestBody?.content ?? {}))
      unboundedLists(media.schema, `${where} body`, found);
  }
  expect(found).toEqual([]);
});

test("every status an operation answers is one the description declares", async () => {
  const { owner, workspaceId } = await ownerWithWorkspace(app.baseUrl);
  const session = `next-auth.session-token=${owner.client.cookies.get("next-auth.session-token")}`;
  const unknownId = "00000000-0000-4000-8000-000000000000";
  const fill = (path: string, segment?: string) =>
    path.replace(/\{([^}]+)\}/g, (_, name) =>
      name === "workspaceId" && segment === undefined ? workspaceId : (segment ?? unknownId),
    );
  const undeclared = new Set<string>();
  const observe = async (method: string, url: string, init: RequestInit = {}) => {
    const res = await fetch(`${app.baseUrl}${url}`, { method, redirect: "manual", ...init });
    await res.arrayBuffer();
    const found = await undeclaredStatus(app.baseUrl, method, url, res.status);
    if (found) undeclared.add(found);
    return res.status;
  };
  // Answers the probes below do not reach: a forged click, credentials by GET, an ETag revalidation.
  expect(await observe("GET", `/api/messages/${unknownId}/track?u=abc&s=forged`)).toBe(400);
  await observe("GET", `/api/messages/${unknownId}/track?s=forged`);
  expect(await observe("GET", "/api/auth/callback/credentials")).toBe(302);
  await observe("GET", "/api/auth/callback/credentials", { headers: { cookie: session } });
  await observe("GET", "/api/auth/callback/github");
  const { siteKey } = (await owner.client.get(`/api/workspaces/${workspaceId}`)).body;
  const config = await fetch(`${app.baseUrl}/api/script/config?key=${siteKey}`);
  const revalidated = await observe("GET", `/api/script/config?key=${siteKey}`, {
    headers: { "if-none-match": config.headers.get("etag") ?? "" },
  });
  expect(revalidated).toBe(304);
  // Deletes last: they may remove the workspace the others run in.
  const ops = operations().sort((a, b) => Number(a.method === "delete") - Number(b.method === "delete"));
  for (const { path, method } of ops) {
    const verb = method.toUpperCase();
    const json = ["POST", "PUT", "PATCH"].includes(verb)
      ? { body: "{}", headers: { "content-type": "application/json" } }
      : {};
    await observe(verb, fill(path), json);
    await observe(verb, fill(path), { ...json, headers: { ...json.headers, cookie: session } });
    if (path.includes("{"))
      await observe(verb, fill(path, "x".repeat(300)), {
        ...json,
        headers: { ...json.headers, cookie: session },
      });
  }
  expect([...undeclared].sort()).toEqual([]);
}, 120_000);
