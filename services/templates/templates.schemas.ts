import { Type, type Static, type TSchema } from "@sinclair/typebox";
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
import { CHANNELS } from "../../lib/channels";
import { SendTestResultSchema } from "../messages/messages.schemas";

const Id = Type.String({ minLength: 1, maxLength: 64 });
const Text = (maxLength: number, description?: string) => Type.String({ maxLength, description });
const Optional = <T extends TSchema>(schema: T) => Type.Optional(Nullable(schema));
export const Locale = Type.String({
  minLength: 2,
  maxLength: 35,
  pattern: "^[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{2,8})*$",
  errorMessage: "must be a language tag such as en, de or pt-BR",
});
export const ChannelSchema = StringEnum(CHANNELS);

/** Contract 2: each channel's content fields; every text is Liquid. */
export const contentSchemas = {
  email: Component(
    "EmailContent",
    Type.Object(
      {
        subject: Text(998),
        preheader: Optional(Text(500)),
        html: Optional(Text(1_000_000, "HTML; compiled from `mjml` when that is given")),
        text: Optional(Text(1_000_000, "Plain text; null: derived from the HTML at send")),
        mjml: Type.Optional(Text(1_000_000, "MJML source, compiled into `html` at save")),
        fromName: Optional(Text(200)),
        fromEmail: Optional(Text(254)),
        replyTo: Optional(Text(254)),
        attachments: Type.Optional(
          Type.Array(
            Type.Object(
              {
                filename: Type.String({ minLength: 1, maxLength: 255, pattern: '^[^\\r\\n"/\\\\]+$' }),
                contentType: Type.String({ minLength: 3, maxLength: 100, pattern: "^[\\w.+-]+/[\\w.+-]+$" }),
                content: Type.String({
                  maxLength: 10_000_000,
                  pattern: "^[A-Za-z0-9+/]*={0,2}$",
                  description: "The file, base64",
                }),
              },
              { additionalProperties: false },
            ),
            { maxItems: 10, description: "Files sent with the mail (not Liquid)" },
          ),
        ),
      },
      { additionalProperties: false },
    ),
  ),
  sms: Component("SmsContent", Type.Object({ body: Text(1600) }, { additionalProperties: false })),
  push: Component(
    "PushContent",
    Type.Object(
      {
        title: Text(200),
        body: Text(2000),
        url: Optional(Text(2048)),
        icon: Optional(Text(2048)),
        image: Optional(Text(2048)),
      },
      { additionalProperties: false },
    ),
  ),
  chatapp1: Component(
    "Chatapp1Content",
    Type.Object(
      {
        text: Text(4096),
        buttons: Type.Optional(
          Type.Array(Type.Object({ text: Text(64), url: Text(2048) }, { additionalProperties: false }), {
            maxItems: 10,
          }),
        ),
      },
      { additionalProperties: false },
    ),
  ),
  chatapp2: Component(
    "Chatapp2Content",
    Type.Union([
      Type.Object({ text: Text(4096) }, { additionalProperties: false }),
      Type.Object(
        {
          templateName: Text(512),
          language: Text(35),
          parameters: Type.Optional(Type.Array(Text(1024), { maxItems: 50 })),
        },
        { additionalProperties: false },
      ),
    ]),
  ),
};

/**
 * Content in params is any object: the channel decides its shape, checked by
 * the handler against `contentSchemas` (an `anyOf` here would let Ajv strip
 * fields while trying the branches).
 */
const ContentParam = Type.Record(Type.String(), Type.Unknown(), {
  description:
    "The channel's content (EmailContent, SmsContent, PushContent, Chatapp1Content, Chatapp2Content); every text is Liquid",
});
const ContentAnswer = Type.Union(Object.values(contentSchemas));
const PartialContentAnswer = Type.Record(Type.String(), Type.Unknown(), {
  description: "Partial content over the base",
});
const Tags = Type.Array(Trimmed({ minLength: 1, maxLength: 100 }), { maxItems: 50 });
const VariantId = StringEnum(["A", "B", "C", "D", "E"]);
const Variables = Type.Optional(
  Type.Record(Type.String(), Type.Unknown(), {
    description:
      "Extra variables at the top level of the render; reserved names (contact, workspace, ...) win",
  }),
);

export const TemplateSchema = Component(
  "Template",
  Type.Object({
    id: Type.String(),
    name: Type.String(),
    channel: ChannelSchema,
    locale: Type.String(),
    content: ContentAnswer,
    tags: Type.Array(Type.String()),
    translations: Type.Array(Type.String(), { description: "Locales with a translation" }),
    createdAt: DateTime(),
    updatedAt: DateTime(),
  }),
);
export type TemplateView = Static<typeof TemplateSchema>;

export const TranslationSchema = Component(
  "TemplateTranslation",
  Type.Object({
    locale: Type.String(),
    content: PartialContentAnswer,
    createdAt: DateTime(),
    updatedAt: DateTime(),
  }),
);
export type TranslationView = Static<typeof TranslationSchema>;

export const AbVariantSchema = Type.Object({
  id: Type.String({ description: "A..E" }),
  weight: Int32({ minimum: 0, maximum: 100 }),
  content: PartialContentAnswer,
});
export const AbSchema = Component(
  "TemplateAbTest",
  Type.Object({
    variants: Type.Array(AbVariantSchema),
    metric: StringEnum(["open", "click"]),
    winner: Nullable(Type.String()),
    stats: Type.Array(
      Type.Object({
        id: Type.String(),
        sent: Type.Integer(),
        opened: Type.Integer(),
        clicked: Type.Integer(),
        rate: Type.Number({ description: "opened/sent or clicked/sent by `metric`; 0 before any send" }),
      }),
    ),
  }),
);
export type AbView = Static<typeof AbSchema>;

export const PreviewSchema = Component(
  "TemplatePreview",
  Type.Object({
    channel: ChannelSchema,
    locale: Type.String(),
    variant: Nullable(Type.String()),
    content: Type.Record(Type.String(), Type.Unknown(), {
      description: "The rendered content (email: CSS inlined, `text` derived when absent)",
    }),
  }),
);

const templateRef = { workspaceId: WorkspaceIdParam, templateId: Id };
const renderOptions = {
  contactId: Type.Optional(Id),
  locale: Type.Optional(Locale),
  variant: Type.Optional(VariantId),
  variables: Variables,
};

export const schemas = {
  list: Params({
    workspaceId: WorkspaceIdParam,
    ...PageQuery,
    channel: Type.Optional(ChannelSchema),
    tag: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    search: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: "In the name" })),
  }),
  create: Params({
    workspaceId: WorkspaceIdParam,
    name: Trimmed({ minLength: 1, maxLength: 200 }),
    channel: ChannelSchema,
    locale: Type.Optional(Locale),
    content: ContentParam,
    tags: Type.Optional(Tags),
  }),
  get: Params(templateRef),
  update: Params({
    ...templateRef,
    name: Type.Optional(Trimmed({ minLength: 1, maxLength: 200 })),
    locale: Type.Optional(Locale),
    content: Type.Optional(ContentParam),
    tags: Type.Optional(Tags),
  }),
  abPut: Params({
    ...templateRef,
    variants: Type.Array(
      Type.Object(
        { id: VariantId, weight: Int32({ minimum: 0, maximum: 100 }), content: Type.Optional(ContentParam) },
        { additionalProperties: false },
      ),
      { maxItems: 5, description: "2-5 variants A..E with integer weights summing 100; [] removes the test" },
    ),
    metric: Type.Optional(StringEnum(["open", "click"])),
  }),
  abWinner: Params({ ...templateRef, variant: VariantId }),
  preview: Params({ ...templateRef, ...renderOptions }),
  previewUnsaved: Params({
    workspaceId: WorkspaceIdParam,
    channel: ChannelSchema,
    content: ContentParam,
    locale: Type.Optional(Locale),
    contactId: Type.Optional(Id),
    variables: Variables,
  }),
  sendTest: Params({
    ...templateRef,
    to: Type.Array(Trimmed({ minLength: 1, maxLength: 254 }), { minItems: 1, maxItems: 5 }),
    ...renderOptions,
  }),
  translate: Params({
    ...templateRef,
    targetLocales: Type.Array(Locale, { minItems: 1, maxItems: 20 }),
    overwrite: Type.Optional(Type.Boolean({ default: false })),
  }),
  translationCreate: Params({ ...templateRef, locale: Locale, content: ContentParam }),
  translationGet: Params({ ...templateRef, locale: Locale }),
  translationUpdate: Params({ ...templateRef, locale: Locale, content: ContentParam }),
  /** Internal (messages): a template with its translations and A/B test, to render sends. */
  resolve: Params({ templateId: Id }),
  abList: Params({}),
};

export const ResolvedTemplateSchema = Type.Object({
  template: TemplateSchema,
  translations: Type.Record(Type.String(), Type.Record(Type.String(), Type.Unknown())),
  ab: Nullable(
    Type.Object({
      variants: Type.Array(AbVariantSchema),
      metric: StringEnum(["open", "click"]),
      winner: Nullable(Type.String()),
    }),
  ),
});
export type ResolvedTemplate = Static<typeof ResolvedTemplateSchema>;

export const results = {
  list: Paginated(TemplateSchema),
  template: TemplateSchema,
  translations: Type.Array(TranslationSchema),
  translation: TranslationSchema,
  ab: AbSchema,
  preview: PreviewSchema,
  sendTest: SendTestResultSchema,
  translate: Type.Object({ translations: Type.Array(TranslationSchema) }),
  success: Type.Object({ success: Type.Literal(true) }),
  resolve: ResolvedTemplateSchema,
  abList: Type.Array(Type.Intersect([Type.Object({ templateId: Type.String() }), AbSchema])),
};
