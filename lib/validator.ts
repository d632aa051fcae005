import { Errors, Validators, type ServiceBroker } from "moleculer";
import { compileParamsChecker, isJsonSchema, type Checker } from "./schema";

type Rules = Record<string, unknown>;

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
