import { Type, type Static } from "@sinclair/typebox";
import { Paginated, PageQuery } from "../../lib/pagination";
import {
  Component,
  DateTime,
  Int32,
  Nullable,
  Params,
  StringEnum,
  Trimmed,
  WorkspaceIdParam,
} from "../../lib/schema";

const Id = Type.String({ minLength: 1, maxLength: 64 });
const FormId = Id;

export const FIELD_TYPES = [
  "text",
  "email",
  "phone",
  "number",
  "textarea",
  "select",
  "radio",
  "checkbox",
  "date",
  "hidden",
  "consent",
] as const;

const HttpUrl = (description: string) =>
  Nullable(
    Type.String({
      maxLength: 2000,
      pattern: "^https?://[^\\s]+$",
      errorMessage: "must be an http(s) URL",
      description,
    }),
  );

export const FieldSchema = Type.Object(
  {
    key: Type.String({
      pattern: "^[A-Za-z][A-Za-z0-9_]{0,63}$",
      errorMessage: "must start with a letter and hold letters, digits and _ (at most 64)",
      description: "The name a submission uses for this field",
    }),
    label: Trimmed({
      minLength: 1,
      maxLength: 1000,
      description: "Shown to the visitor; a consent field's label is the consent text kept as proof",
    }),
    type: StringEnum(FIELD_TYPES),
    required: Type.Boolean({ default: false }),
    options: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 200 }), {
        minItems: 1,
        maxItems: 100,
        description: "select and radio: the choices; checkbox: several choices (without: one box)",
      }),
    ),
    mapTo: Type.Optional(
      Nullable(
        Type.String({
          maxLength: 200,
          description:
            "A contact field (`email`, `firstName`, `customFields.<key>`, `attributes.<key>`) or `consent.<channel>`",
        }),
      ),
    ),
    placeholder: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
    defaultValue: Type.Optional(
      Nullable(
        Type.String({
          maxLength: 1000,
          description: "A hidden field's value unless the page URL sets it (`?utm_source=`)",
        }),
      ),
    ),
    validation: Type.Optional(
      Type.Object(
        {
          minLength: Type.Optional(Int32({ minimum: 0, maximum: 10_000 })),
          maxLength: Type.Optional(Int32({ minimum: 1, maximum: 10_000 })),
          min: Type.Optional(Type.Number()),
          max: Type.Optional(Type.Number()),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);
export type FormField = Static<typeof FieldSchema>;

export const SettingsSchema = Type.Object(
  {
    submitLabel: Type.String({ minLength: 1, maxLength: 100, default: "Submit" }),
    successMessage: Type.String({ minLength: 1, maxLength: 2000, default: "Thank you." }),
    redirectUrl: Type.Optional(
      HttpUrl("Where a visitor goes after submitting: an allowed origin of the workspace"),
    ),
    confirmRedirectUrl: Type.Optional(
      HttpUrl("Where a double opt-in's confirm link leads: an allowed origin of the workspace"),
    ),
    doubleOptIn: Type.Boolean({ default: false, description: "Consent waits for the confirm mail's link" }),
    assetId: Type.Optional(
      Nullable(
        Type.String({
          minLength: 1,
          maxLength: 64,
          description:
            "An asset of the workspace the form hands out: a submission's redirect is its download, signed for the visitor (so a gated asset opens)",
        }),
      ),
    ),
  },
  { additionalProperties: false },
);
export type FormSettings = Static<typeof SettingsSchema>;

export const FormSchema = Component(
  "Form",
  Type.Object({
    id: Type.String(),
    name: Type.String(),
    active: Type.Boolean(),
    fields: Type.Array(FieldSchema),
    settings: SettingsSchema,
    createdAt: DateTime(),
    updatedAt: DateTime(),
  }),
);
export type FormView = Static<typeof FormSchema>;

export const SubmissionSchema = Component(
  "FormSubmission",
  Type.Object({
    id: Type.String(),
    formId: Type.String(),
    contactId: Nullable(Type.String()),
    fields: Type.Record(Type.String(), Type.Unknown()),
    pageUrl: Nullable(Type.String()),
    consent: Type.Array(
      Type.Object({
        channel: Type.String(),
        text: Type.String(),
        status: StringEnum(["opted_in", "pending_confirmation"]),
      }),
      { description: "Proof of consent: each channel asked for with the text shown" },
    ),
    ip: Nullable(Type.String()),
    userAgent: Nullable(Type.String()),
    createdAt: DateTime(),
  }),
);
export type SubmissionView = Static<typeof SubmissionSchema>;

const formBody = {
  name: Trimmed({ minLength: 1, maxLength: 200 }),
  active: Type.Boolean({ default: true }),
  fields: Type.Array(FieldSchema, { minItems: 1, maxItems: 100 }),
  settings: Type.Optional(SettingsSchema),
};
const Day = Type.String({ format: "date", description: "YYYY-MM-DD (UTC)" });
const Moment = Type.String({ format: "date-time" });

export const schemas = {
  list: Params({
    workspaceId: WorkspaceIdParam,
    ...PageQuery,
    search: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: "Part of the name" })),
    active: Type.Optional(Type.Boolean()),
    sort: Type.Optional(
      Type.String({
        maxLength: 40,
        description: "name, createdAt, updatedAt (prefix - for descending; default -createdAt)",
      }),
    ),
  }),
  create: Params({ workspaceId: WorkspaceIdParam, ...formBody }),
  get: Params({ workspaceId: WorkspaceIdParam, formId: FormId }),
  replace: Params({ workspaceId: WorkspaceIdParam, formId: FormId, ...formBody }),
  analytics: Params({
    workspaceId: WorkspaceIdParam,
    formId: FormId,
    from: Type.Optional(Day),
    to: Type.Optional(Day),
  }),
  submissions: Params({
    workspaceId: WorkspaceIdParam,
    formId: FormId,
    ...PageQuery,
    from: Type.Optional(Moment),
    to: Type.Optional(Moment),
  }),
  /** A submission: the form's keys beside these (JSON or form-encoded). */
  submit: Params(
    {
      formId: FormId,
      _hp: Type.Optional(Type.Unknown({ description: "Honeypot: left empty by people" })),
      sessionId: Type.Optional(Type.String({ maxLength: 200 })),
      pageUrl: Type.Optional(Type.String({ maxLength: 2000 })),
    },
    { additionalProperties: true },
  ),
  page: Params({ formId: FormId }),
  confirmRedirect: Params({ formId: FormId }),
  markup: Params({ formIds: Type.Array(FormId, { maxItems: 50 }) }),
  active: Params({}),
  prefill: Params({ formId: FormId, contactId: Id }),
};

export const results = {
  form: FormSchema,
  list: Paginated(FormSchema),
  removed: Type.Object({ success: Type.Boolean() }),
  analytics: Type.Object({
    views: Type.Integer(),
    submissions: Type.Integer(),
    conversionRate: Type.Number({ description: "Submissions per view (0 without views)" }),
    points: Type.Array(
      Type.Object({ date: Type.String(), views: Type.Integer(), submissions: Type.Integer() }),
    ),
  }),
  submissions: Paginated(SubmissionSchema),
  submitted: Type.Object({
    submissionId: Type.String(),
    contactId: Nullable(Type.String()),
    message: Type.String(),
    redirectUrl: Nullable(Type.String()),
    visitorToken: Nullable(
      Type.String({ description: "Identifies the visitor to the website script (`prefill`, `event`)" }),
    ),
  }),
  confirmRedirect: Nullable(Type.String()),
  markup: Type.Record(Type.String(), Type.String(), { description: "Each active form's markup by id" }),
  active: Type.Array(Type.Object({ id: Type.String(), name: Type.String() })),
  prefill: Type.Object({ fields: Type.Record(Type.String(), Type.Unknown()) }),
};
