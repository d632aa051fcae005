import { Type, type TSchema } from "@sinclair/typebox";
import type { FieldIssue } from "../../lib/errors";
import { schemaIssues } from "../../lib/schema";
import { Binds } from "../../lib/database";
import { CONSENT_CHANNELS } from "../../lib/channels";
import { CONTACT_FIELDS } from "../contacts/fields";
import { resolveField, validateEventWhere } from "../segments/filter-schema";
import type { TriggerType } from "./campaigns.schemas";

/**
 * Trigger configs (contract 9) and which recorded event enrolls by which
 * trigger, pure (an event trigger's `where` is then asked of the stored
 * event). A form submission is the recorded event `form.submitted`.
 */

const Closed = <T extends Parameters<typeof Type.Object>[0]>(properties: T) =>
  Type.Object(properties, { additionalProperties: false });
const Id = Type.String({ minLength: 1, maxLength: 64 });

/** The trigger types this build runs; the others are refused when a trigger is saved. */
const CONFIGS: Partial<Record<TriggerType, TSchema>> = {
  event: Closed({
    eventType: Type.String({ minLength: 1, maxLength: 200 }),
    where: Type.Optional(Type.Array(Type.Unknown(), { description: "Conditions on the event's fields" })),
  }),
  contact_created: Closed({}),
  contact_updated: Closed({
    fields: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 200 }), {
        minItems: 1,
        maxItems: 50,
        description:
          "Only changes of these fields enroll (`customFields` any of its keys, `customFields.plan` one); absent: any change",
      }),
    ),
  }),
  segment_entered: Closed({ segmentId: Id }),
  segment_exited: Closed({ segmentId: Id }),
  form_submitted: Closed({ formId: Type.Optional(Id) }),
  date_anniversary: Closed({
    field: Type.String({ minLength: 1, maxLength: 200 }),
    offsetDays: Type.Optional(Type.Integer({ minimum: -365, maximum: 365 })),
    time: Type.String({
      pattern: "^([01][0-9]|2[0-3]):[0-5][0-9]$",
      errorMessage: "must be a time of day such as 09:00",
    }),
  }),
  manual: Closed({}),
};

/** The SQL of a contact date a `date_anniversary` trigger may name: a date column, or a date in a JSON document. */
export function anniversaryField(name: string, binds: Binds): string | null {
  const field = resolveField(name, "contact");
  if (field?.kind === "column" && field.type === "date") return field.column;
  if (field?.kind === "json") return `segments_ts(${field.column} #> ${binds.p(field.path, "text[]")})`;
  return null;
}

export function triggerConfigIssues(type: TriggerType, config: Record<string, unknown>): FieldIssue[] {
  const schema = CONFIGS[type];
  if (!schema) return [{ field: "type", message: `${type} triggers are not available yet` }];
  const issues = schemaIssues(schema as Record<string, unknown>, config).map((i) => ({
    field: i.field ? `config.${i.field}` : "config",
    message: i.message,
  }));
  if (issues.length) return issues;
  if (type === "date_anniversary" && !anniversaryField(String(config.field), new Binds()))
    return [
      {
        field: "config.field",
        message:
          "must be a date of the contact: createdAt, updatedAt, customFields.<key> or attributes.<key>",
      },
    ];
  if (type === "contact_updated")
    return ((config.fields as string[] | undefined) ?? []).flatMap((name, i) =>
      isContactField(name)
        ? []
        : [{ field: `config.fields[${i}]`, message: `${name} is not a field of a contact` }],
    );
  if (config.where === undefined) return issues;
  return validateEventWhere(config.where, "config.where");
}

/** A contact field a `contact_updated` trigger may watch: a field, a JSON document or one of its keys, or `consent.<channel>`. */
function isContactField(name: string): boolean {
  const [head, ...rest] = name.split(".");
  if (head === "consent")
    return !rest.length || (rest.length === 1 && CONSENT_CHANNELS.some((c) => c === rest[0]));
  if (!Object.prototype.hasOwnProperty.call(CONTACT_FIELDS, head)) return false;
  return (
    !rest.length ||
    (CONTACT_FIELDS[head as keyof typeof CONTACT_FIELDS].kind === "json" && rest.every(Boolean))
  );
}

/**
 * Whether a `contact.updated` fact with these changed fields enrolls by a
 * `contact_updated` trigger watching `fields` (absent: any change). A fact
 * that names no fields (staged before facts named them) counts as any change.
 */
export function contactChangeMatches(fields: string[] | undefined, changed: string[] | undefined): boolean {
  if (!fields?.length || !changed) return true;
  return changed.some((c) => fields.some((f) => c === f || c.startsWith(`${f}.`) || f.startsWith(`${c}.`)));
}

/** Whether a live trigger enrolls for this event. */
export function triggerMatches(
  trigger: { type: TriggerType; config: Record<string, unknown> },
  event: { type: string; metadata?: unknown },
): boolean {
  if (trigger.type === "event") return trigger.config.eventType === event.type;
  if (trigger.type === "form_submitted")
    return (
      event.type === "form.submitted" &&
      (!trigger.config.formId ||
        (event.metadata as { formId?: unknown } | null)?.formId === trigger.config.formId)
    );
  return false;
}
