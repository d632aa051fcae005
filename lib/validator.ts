import { Errors, type ActionSchema } from "moleculer";
import { validationError } from "./errors";
import type { AppContext } from "./moleculer-types";
import { compileParamsChecker, isJsonSchema, unstorableInput, type Checker } from "./schema";

type Handler = (ctx: AppContext) => Promise<unknown>;

/** Actions of the libraries we mix in (moleculer-web's), internal only, which keep their own fastest-validator rules. */
const LIBRARY_ACTIONS = new Set(["api.rest", "api.addRoute", "api.removeRoute"]);

/**
 * Whether requests reach the action: it has a `rest`, or is a public page
 * the gateway routes by an alias (`/f/{formId}`, `/p/{workspaceSlug}/{slug}`).
 */
const routed = (action: ActionSchema) => Boolean(action.rest) || action.auth === "public";

/** An action's params checker: its TypeBox schema through Ajv (lib/schema.ts). Anything else is a mistake caught at start. */
export function paramsChecker(action: ActionSchema): Checker | null {
  if (!action.params || typeof action.params !== "object") return null;
  if (!isJsonSchema(action.params)) {
    throw new Error(`${action.name}: params must be a TypeBox schema (see lib/define-service.ts)`);
  }
  return compileParamsChecker(action.params, { rawBody: Boolean(action.rawBody), internal: !routed(action) });
}

/**
 * Validation as a broker middleware placed inside the Authorize middleware
 * (the broker's built-in validator would run outside it), so a call is
 * authenticated, then authorized, then validated: an anonymous caller with a
 * bad body gets 401 and a VIEWER 403, never a 400 that reveals the schema.
 * A request's params (routes only: internal calls carry what was already
 * checked) must also be storable text before any schema looks at them.
 * Moleculer's own `$node` actions and moleculer-web's keep their own rules (internal only).
 */
export function validatorMiddleware() {
  return {
    localAction(handler: Handler, action: ActionSchema): Handler {
      if (action.name?.startsWith("$") || LIBRARY_ACTIONS.has(action.name ?? "")) return handler;
      const check = paramsChecker(action);
      const fromRequests = routed(action);
      if (!check && !fromRequests) return handler;
      return function validateParams(ctx: AppContext) {
        const issue = fromRequests ? unstorableInput(ctx.params) : null;
        if (issue)
          return Promise.reject(validationError(`${issue.field || "body"} ${issue.message}`, [issue]));
        const result = check ? check(ctx.params ?? {}, (ctx.meta.contentType ?? "").includes("json")) : true;
        if (result !== true) {
          return Promise.reject(
            new Errors.ValidationError("Parameters validation error!", "VALIDATION_ERROR", result),
          );
        }
        return handler(ctx);
      };
    },
  };
}
