import { Errors, Validators, type ActionSchema, type ServiceBroker } from "moleculer";
import { validationError } from "./errors";
import type { AppContext } from "./moleculer-types";
import { compileParamsChecker, isJsonSchema, unstorableInput, type Checker } from "./schema";

type Rules = Record<string, unknown>;
type Handler = (ctx: AppContext) => Promise<unknown>;

/**
 * Moleculer's validator: TypeBox schemas through Ajv (lib/schema.ts). Areas
 * not yet moved to TypeBox keep their fastest-validator rules, checked by
 * Moleculer's own validator, until each is converted.
 */
export class SchemaValidator extends Validators.Base {
  private readonly legacy = new Validators.Fastest();

  init(broker: ServiceBroker): void {
    super.init(broker);
    this.legacy.init(broker);
  }

  compile(schema: Rules): Checker {
    // fastest-validator's checker has the same contract: true, or the issues.
    return isJsonSchema(schema) ? compileParamsChecker(schema) : (this.legacy.compile(schema) as Checker);
  }

  validate(params: Rules, schema: Rules): boolean {
    const result = this.compile(schema)(params);
    if (result !== true)
      throw new Errors.ValidationError("Parameters validation error!", "VALIDATION_ERROR", result);
    return true;
  }

  convertSchemaToMoleculer(schema: Rules): Rules {
    return schema;
  }
}

/**
 * Validation as a broker middleware placed inside the Authorize middleware
 * (the broker's built-in validator would run outside it), so a call is
 * authenticated, then authorized, then validated: an anonymous caller with a
 * bad body gets 401 and a VIEWER 403, never a 400 that reveals the schema.
 * A request's params (routes only: internal calls carry what was already
 * checked) must also be storable text before any schema looks at them.
 */
export function validatorMiddleware() {
  const validator = new SchemaValidator();
  return {
    created(broker: ServiceBroker) {
      validator.init(broker);
    },
    localAction(handler: Handler, action: ActionSchema): Handler {
      const check =
        action.params && typeof action.params === "object" ? validator.compile(action.params) : null;
      if (!check && !action.rest) return handler;
      return function validateParams(ctx: AppContext) {
        const issue = action.rest ? unstorableInput(ctx.params) : null;
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
