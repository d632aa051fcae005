import { requires } from "../../lib/access";
import { Type } from "@sinclair/typebox";
import { answerFieldSchemas, writableFieldSchemas } from "./fields";
import { Paginated, PageQuery } from "../../lib/pagination";
import { Component, DateTime, Int32, Nullable, Params, StringEnum, WorkspaceIdParam } from "../../lib/schema";
import { CONSENT_CHANNELS } from "../../lib/channels";
import { CUSTOM_FIELD_TYPES } from "./custom-fields";

/** Params and answers of the contacts, custom fields and stages actions (also the OpenAPI description). */

/** The contacts routes' base path and OpenAPI tag (the service and its action mixins share them). */
export const CONTACTS_PATH = "/workspaces/:workspaceId/contacts";
export const CONTACTS_TAGS = ["Contacts"];

/** Who may call what: reading, writing and deleting contacts. */
export const ACCESS = {
  read: requires("contacts.read"),
  write: requires("contacts.write"),
  remove: requires("contacts.delete"),
} as const;

const Json = (description: string) => Type.Record(Type.String(), Type.Unknown(), { description });
const ContactId = Type.String({ minLength: 1, maxLength: 64 });
/** A time filter: a date (midnight UTC) or a date-time. */
const Moment = Type.Union([Type.String({ format: "date-time" }), Type.String({ format: "date" })]);
const Position = Type.Optional(Int32({ minimum: 0 }));
const SortParam = Type.Optional(
  Type.String({ maxLength: 50, description: "A field, `-field` for descending (e.g. `-createdAt`)" }),
);

/** Writable contact fields (contacts/fields.ts); normalisation (E.164, IANA zone, BCP 47, lower-cased email) happens in normalize.ts. */
export const contactFields = writableFieldSchemas;

/** List/export filters: `attributes[plan]=pro` and `customFields[key]=value` match a JSON value's text form. */
export const filterParams = {
  search: Type.Optional(Type.String({ maxLength: 200 })),
  tag: Type.Optional(Type.String({ maxLength: 100 })),
  stage: Type.Optional(Type.String({ maxLength: 100 })),
  country: Type.Optional(Type.String({ maxLength: 255 })),
  city: Type.Optional(Type.String({ maxLength: 255 })),
  createdFrom: Type.Optional(Moment),
  createdTo: Type.Optional(Moment),
  attributes: Type.Optional(Json("`attributes[key]=value`")),
  customFields: Type.Optional(Json("`customFields[key]=value`")),
};

const ConsentStatus = StringEnum(["opted_in", "opted_out", "unknown"]);
export const ConsentEntrySchema = Component(
  "ConsentEntry",
  Type.Object({
    status: ConsentStatus,
    source: Nullable(Type.String()),
    updatedAt: Nullable(DateTime()),
    messageId: Type.Optional(
      Nullable(
        Type.String({
          description:
            "The message whose link the contact used (unsubscribe link, one-click, preference centre): what proves the choice",
        }),
      ),
    ),
  }),
);
export const ConsentSchema = Component(
  "Consent",
  Type.Object(Object.fromEntries(CONSENT_CHANNELS.map((channel) => [channel, ConsentEntrySchema]))),
);

export const ContactSchema = Component(
  "Contact",
  Type.Object({
    id: Type.String(),
    ...answerFieldSchemas,
    consent: ConsentSchema,
    createdAt: DateTime(),
    updatedAt: DateTime(),
  }),
);

const DncType = StringEnum(["email", "phone"]);
export const DncEntrySchema = Component(
  "DncEntry",
  Type.Object({
    id: Type.String(),
    type: DncType,
    value: Type.String(),
    reason: Nullable(Type.String()),
    createdBy: Nullable(Type.String()),
    createdAt: DateTime(),
  }),
);

const DuplicateReason = StringEnum(["email", "phone", "name"]);
const ContactOverview = Component(
  "ContactOverview",
  Type.Object({
    id: Type.String(),
    email: Nullable(Type.String()),
    phone: Nullable(Type.String()),
    firstName: Nullable(Type.String()),
    lastName: Nullable(Type.String()),
    createdAt: DateTime(),
  }),
);

export const NoteSchema = Component(
  "Note",
  Type.Object({
    id: Type.String(),
    contactId: Type.String(),
    body: Type.String(),
    author: Type.Object({ type: Type.String(), id: Nullable(Type.String()), name: Nullable(Type.String()) }),
    createdAt: DateTime(),
  }),
);

const StageChange = Component(
  "StageChange",
  Type.Object({
    id: Type.String(),
    from: Nullable(Type.String()),
    to: Nullable(Type.String()),
    reason: Nullable(Type.String()),
    changedBy: Type.Object({ type: Type.String(), id: Nullable(Type.String()) }),
    createdAt: DateTime(),
  }),
);
export const StageHistorySchema = Type.Object({
  stage: Nullable(Type.String()),
  history: Type.Array(StageChange),
});

const TimelineItem = Component(
  "TimelineItem",
  Type.Object({
    kind: StringEnum(["event", "note", "stage_change", "message", "form_submission"]),
    id: Type.String(),
    timestamp: DateTime(),
    data: Json("What happened, by kind"),
  }),
);

export const StageDefSchema = Component(
  "LifecycleStage",
  Type.Object({
    id: Type.String(),
    key: Type.String(),
    name: Type.String(),
    position: Type.Integer(),
    color: Nullable(Type.String()),
    contactCount: Type.Integer(),
    createdAt: DateTime(),
    updatedAt: DateTime(),
  }),
);

export const CustomFieldSchema = Component(
  "CustomField",
  Type.Object({
    id: Type.String(),
    key: Type.String(),
    label: Type.String(),
    type: StringEnum(CUSTOM_FIELD_TYPES),
    options: Type.Array(Type.String()),
    groupId: Nullable(Type.String()),
    required: Type.Boolean(),
    position: Type.Integer(),
    createdAt: DateTime(),
    updatedAt: DateTime(),
  }),
);

export const CustomFieldGroupSchema = Component(
  "CustomFieldGroup",
  Type.Object({
    id: Type.String(),
    name: Type.String(),
    position: Type.Integer(),
    fields: Type.Integer({ description: "How many fields the group holds" }),
    createdAt: DateTime(),
    updatedAt: DateTime(),
  }),
);

export const JobAcceptedSchema = Type.Object({
  jobId: Type.String({ description: "Follow it at `GET {ws}/jobs?id=`" }),
});
export const SuccessSchema = Type.Object({ success: Type.Literal(true) });
const Rows = Type.Array(Json("A stored row"));

export const results = {
  attributeKeys: Type.Array(
    Type.Object({ key: Type.String(), count: Type.Integer(), types: Type.Array(Type.String()) }),
  ),
  geo: Type.Object({
    countries: Type.Array(Type.Object({ country: Nullable(Type.String()), count: Type.Integer() })),
    cities: Type.Array(
      Type.Object({ country: Nullable(Type.String()), city: Type.String(), count: Type.Integer() }),
    ),
  }),
  dncList: Paginated(DncEntrySchema),
  list: Paginated(ContactSchema),
  bulk: Type.Object({ affected: Type.Integer() }),
  ingest: Type.Object({
    created: Type.Integer(),
    updated: Type.Integer(),
    failed: Type.Array(Type.Object({ index: Type.Integer(), error: Type.String() })),
  }),
  duplicates: Paginated(
    Type.Object({ reason: DuplicateReason, value: Type.String(), contacts: Type.Array(ContactOverview) }),
  ),
  contactDuplicates: Type.Array(
    Type.Object({ contact: ContactOverview, reasons: Type.Array(DuplicateReason), score: Type.Number() }),
  ),
  gdprExport: Type.Object({
    contact: ContactSchema,
    consent: ConsentSchema,
    events: Rows,
    messages: Rows,
    linkClicks: Rows,
    notes: Rows,
    formSubmissions: Rows,
    scores: Rows,
    stageHistory: Rows,
    deals: Rows,
    tasks: Rows,
    segments: Rows,
    conversations: Type.Array(
      Type.Object(
        { messages: Rows },
        {
          additionalProperties: true,
          description: "An inbox thread as stored, with its messages oldest first",
        },
      ),
    ),
  }),
  notes: Paginated(NoteSchema),
  timeline: Paginated(TimelineItem),
  link: Type.Object({ url: Type.String(), token: Type.String(), expiresAt: DateTime() }),
  exportJson: Type.Object({
    contact: ContactSchema,
    notes: Type.Array(NoteSchema),
    stageHistory: Type.Array(StageChange),
  }),
};

const ws = { workspaceId: WorkspaceIdParam };
const contactPath = { workspaceId: WorkspaceIdParam, contactId: ContactId };

export const schemas = {
  list: Params({ ...ws, ...PageQuery, ...filterParams, sort: SortParam }),
  create: Params({ ...ws, ...contactFields }),
  get: Params(contactPath),
  update: Params({ ...contactPath, ...contactFields }),
  consentPut: Params({
    ...contactPath,
    channel: StringEnum([...CONSENT_CHANNELS, "all"]),
    status: StringEnum(["opted_in", "opted_out"]),
    source: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  }),
  dncList: Params({ ...ws, ...PageQuery, type: Type.Optional(DncType) }),
  dncCreate: Params({
    ...ws,
    type: DncType,
    value: Type.String({ minLength: 1, maxLength: 254 }),
    reason: Type.Optional(Type.String({ maxLength: 500 })),
  }),
  dncDelete: Params({ ...ws, type: DncType, value: Type.String({ minLength: 1, maxLength: 254 }) }),
  workspaceOnly: Params(ws),
  geo: Params({ ...ws, country: Type.Optional(Type.String({ maxLength: 255 })) }),
  export: Params({ ...ws, ...filterParams, sort: SortParam }),
  bulk: Params({
    ...ws,
    action: StringEnum(["tag", "untag", "delete", "setStage", "setAttribute"]),
    ids: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { maxItems: 1_000_000 })),
    filter: Type.Optional(Type.Object(filterParams, { additionalProperties: false })),
    value: Type.Optional(Type.Unknown({ description: "The tag, stage, or `{key, value}` attribute" })),
  }),
  ingest: Params({
    ...ws,
    contacts: Type.Array(Type.Unknown({ description: "A contact's fields, plus `emailOptOut`" }), {
      minItems: 1,
      maxItems: 1000,
    }),
  }),
  merge: Params({
    ...ws,
    primaryId: Type.String({ maxLength: 64 }),
    duplicateIds: Type.Array(Type.String({ maxLength: 64 }), { minItems: 1, maxItems: 50 }),
  }),
  duplicates: Params({ ...ws, ...PageQuery }),
  notesList: Params({ ...contactPath, ...PageQuery }),
  noteCreate: Params({ ...contactPath, body: Type.String({ minLength: 1, maxLength: 20_000 }) }),
  timeline: Params({ ...contactPath, ...PageQuery }),
  stageSet: Params({
    ...contactPath,
    stage: Nullable(Type.String({ maxLength: 100 })),
    reason: Type.Optional(Type.String({ maxLength: 500 })),
  }),
  exportOne: Params({ ...contactPath, format: Type.Optional(StringEnum(["csv", "json"])) }),
  dncBlocked: Params({
    emails: Type.Optional(Type.Array(Type.String())),
    phones: Type.Optional(Type.Array(Type.String())),
  }),
  unlinkCompany: Params({ companyId: Type.String({ minLength: 1, maxLength: 64 }) }),
  linkChat: Params({
    token: Type.String({ minLength: 1, maxLength: 200 }),
    chatId: Type.String({ minLength: 1, maxLength: 64 }),
  }),
  stageDefCreate: Params({
    ...ws,
    key: Type.String({
      pattern: "^[a-z][a-z0-9_]{0,49}$",
      description: "1-50 lower-case letters, digits or _ starting with a letter",
      errorMessage: { pattern: "must be 1-50 lower-case letters, digits or _ starting with a letter" },
    }),
    name: Type.String({ minLength: 1, maxLength: 100 }),
    position: Position,
    color: Type.Optional(Type.String({ maxLength: 20 })),
  }),
  stageDefUpdate: Params({
    ...ws,
    stageId: Type.String({ maxLength: 64 }),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    position: Position,
    color: Type.Optional(Nullable(Type.String({ maxLength: 20 }))),
  }),
  stageDefDelete: Params({ ...ws, stageId: Type.String({ maxLength: 64 }) }),
  customFieldList: Params({ ...ws, groupId: Type.Optional(Type.String({ maxLength: 64 })) }),
  customFieldCreate: Params({
    ...ws,
    key: Type.String({
      pattern: "^[a-zA-Z][a-zA-Z0-9_]{0,63}$",
      description: "1-64 letters, digits or _ starting with a letter",
      errorMessage: { pattern: "must be 1-64 letters, digits or _ starting with a letter" },
    }),
    label: Type.String({ minLength: 1, maxLength: 200 }),
    type: StringEnum(CUSTOM_FIELD_TYPES),
    options: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { maxItems: 500 })),
    groupId: Type.Optional(Type.String({ maxLength: 64 })),
    required: Type.Optional(Type.Boolean()),
    position: Position,
  }),
  customFieldGroupCreate: Params({
    ...ws,
    name: Type.String({ minLength: 1, maxLength: 100 }),
    position: Position,
  }),
};

/** The operations whose bodies or answers are not JSON (CSV in, CSV out). */
export const openapi = {
  import: {
    tags: ["Contacts"],
    summary: "Import contacts from CSV (update-or-create by email) as a job",
    description:
      "Body: raw `text/csv`, or `multipart/form-data` with the field `file` (and optionally `mapping`, sent before `file`). " +
      "`mapping` (query parameter or multipart field) is JSON: CSV column → contact field (`email`, `firstName`, ..., " +
      "`attributes.<key>`, `customFields.<key>`, `consent.<channel>`, or null to ignore). Columns named like fields map themselves. " +
      "A `consent.<channel>` cell is `opted_in` or `opted_out` (stored with source `import`; an opt-out emits `unsubscribe.<channel>`); " +
      "`unknown` or empty leaves the stored consent as it is. At most 50 MiB. " +
      "The job's result is `{created, updated, failed: [{line, error}], failedCount, ignoredColumns}` (the header is line 1).",
    requestBody: {
      required: true,
      content: {
        "text/csv": { schema: { type: "string" } },
        "multipart/form-data": {
          schema: {
            type: "object",
            properties: { file: { type: "string", format: "binary" }, mapping: { type: "string" } },
            required: ["file"],
          },
        },
      },
    },
  },
  exportAll: {
    tags: ["Contacts"],
    summary: "Export contacts as CSV",
    description:
      "Streams `text/csv` filtered like the list: a header row of field names, then one row per contact; " +
      "`consent.<channel>` columns hold `opted_in`, `opted_out` or `unknown`, and `attributes` and `customFields` " +
      "are flattened as `attributes.<key>` and `customFields.<key>`.",
    responses: { "200": { description: "CSV", content: { "text/csv": { schema: { type: "string" } } } } },
  },
  exportOneResponses: {
    "200": {
      description: "The contact as a CSV row under its header (default), or as JSON with `format=json`",
      content: {
        "text/csv": { schema: { type: "string" } },
        "application/json": { schema: results.exportJson },
      },
    },
    "4XX": { $ref: "#/components/responses/Error" },
  },
};

const Ids = Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 1000 });

/** Internal actions of the send path (services/contacts/sending.actions.ts). */
/** A status wanted per channel; absent channels stay as they are. */
const ConsentWish = Type.Partial(
  Type.Object(
    Object.fromEntries(CONSENT_CHANNELS.map((c) => [c, StringEnum(["opted_in", "opted_out"])])) as Record<
      (typeof CONSENT_CHANNELS)[number],
      ReturnType<typeof StringEnum<["opted_in", "opted_out"]>>
    >,
    { additionalProperties: false },
  ),
);

export const sendingSchemas = {
  forSend: Params({ contactIds: Ids }),
  existingIds: Params({ ids: Ids }),
  identify: Params({
    contact: Type.Record(Type.String(), Type.Unknown(), {
      description: "Contact fields by name (blank ones are left out)",
    }),
    consent: Type.Optional(ConsentWish),
    source: Type.String({ minLength: 1, maxLength: 50 }),
  }),
  byAddress: Params({
    type: StringEnum(["email", "phone", "chatapp1ChatId"]),
    value: Type.String({ minLength: 1, maxLength: 254 }),
  }),
  forAddress: Params({
    type: StringEnum(["email", "phone", "chatapp1ChatId"]),
    value: Type.String({ minLength: 1, maxLength: 254 }),
    firstName: Type.Optional(Type.String()),
    lastName: Type.Optional(Type.String()),
  }),
  forAddresses: Params({
    addresses: Type.Array(
      Type.Object({
        type: StringEnum(["email", "phone", "chatapp1ChatId"]),
        value: Type.String({ minLength: 1, maxLength: 254 }),
        firstName: Type.Optional(Type.String()),
        lastName: Type.Optional(Type.String()),
      }),
      { minItems: 1, maxItems: 200 },
    ),
  }),
  dncReasons: Params({
    addresses: Type.Array(
      Type.Object({ type: StringEnum(["email", "phone"]), value: Type.String({ maxLength: 254 }) }),
      { maxItems: 1000 },
    ),
  }),
  applyPreferences: Params({
    contactId: Type.String({ minLength: 1, maxLength: 64 }),
    channels: Type.Optional(ConsentWish),
    topics: Type.Optional(Type.Record(Type.String({ maxLength: 100 }), Type.Boolean())),
    all: Type.Optional(Type.Literal("opted_out")),
    source: Type.String({ minLength: 1, maxLength: 50 }),
    messageId: Type.Optional(Nullable(Type.String({ maxLength: 64 }))),
  }),
};

export const sendingResults = {
  forSend: Type.Array(ContactSchema),
  existingIds: Type.Array(Type.String()),
  identify: Type.Object({ contactId: Type.String(), created: Type.Boolean() }),
  byAddress: Nullable(ContactSchema),
  forAddress: Type.Object({ contactId: Type.String(), created: Type.Boolean() }),
  forAddresses: Type.Array(Type.Object({ contactId: Type.String(), created: Type.Boolean() })),
  dncReasons: Type.Array(
    Type.Object({
      type: StringEnum(["email", "phone"]),
      value: Type.String(),
      reason: Nullable(Type.String()),
    }),
  ),
  applyPreferences: Type.Object({ contact: ContactSchema, optedOut: Type.Array(Type.String()) }),
};
