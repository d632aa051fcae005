import { Type, type Static } from "@sinclair/typebox";
import { Paginated, PageQuery } from "../../lib/pagination";
import { Component, DateTime, Nullable, Params, StringEnum, Trimmed } from "../../lib/schema";
import { PushSubscriptionSchema, WebPushEndpoint, WebPushKeys } from "../push/push.schemas";

const Id = Type.String({ minLength: 1, maxLength: 64 });
const Slug = Type.String({
  pattern: "^[a-z0-9]+(-[a-z0-9]+)*$",
  maxLength: 100,
  errorMessage: "must be lower-case letters and digits joined by single dashes",
});

export const LandingPageSchema = Component(
  "LandingPage",
  Type.Object({
    id: Type.String(),
    name: Type.String(),
    slug: Type.String(),
    title: Type.String(),
    html: Type.String(),
    status: StringEnum(["draft", "published"]),
    publishedAt: Nullable(DateTime()),
    views: Type.Integer(),
    url: Type.String({
      description: "Where it is served while published: {PUBLIC_URL}/p/{workspaceSlug}/{slug}",
    }),
    createdAt: DateTime(),
    updatedAt: DateTime(),
  }),
);
export type LandingPageView = Static<typeof LandingPageSchema>;

const pageBody = {
  name: Trimmed({ minLength: 1, maxLength: 200 }),
  slug: Slug,
  title: Trimmed({ minLength: 1, maxLength: 300 }),
  html: Type.String({
    maxLength: 1_000_000,
    description:
      'The page\'s body, served as written inside a sandbox; `<div data-cms-form="<formId>"></div>` draws that form of the workspace',
  }),
  status: StringEnum(["draft", "published"], { default: "draft" }),
};

const SiteKey = Type.String({ minLength: 1, maxLength: 100, description: "The workspace's public siteKey" });
const PageToken = Type.String({
  minLength: 1,
  maxLength: 2000,
  description:
    'On the workspace\'s own landing pages (served sandboxed, `Origin: null`): the token the page carries (`<meta name="cms-page">`)',
});
const VisitorToken = Type.String({
  minLength: 1,
  maxLength: 2000,
  description: "The token a form submission answered: who the visitor is",
});

/** A filter group of the segments language, checked by filter-schema.ts (with the path of the bad node). */
const Filter = Type.Unsafe<Record<string, unknown>>({
  type: "object",
  description: "A segments filter group on the contact",
});
const Slot = Type.String({
  pattern: "^[A-Za-z0-9_-]{1,100}$",
  errorMessage: "must be letters, digits, _ and - (at most 100)",
  description: 'The name templates (`{% dynamic "slot" %}`) and the website script use',
});

export const DynamicContentSchema = Component(
  "DynamicContent",
  Type.Object({
    id: Type.String(),
    name: Type.String(),
    slot: Type.String(),
    defaultContent: Type.String(),
    variants: Type.Array(
      Type.Object({ filter: Type.Record(Type.String(), Type.Unknown()), content: Type.String() }),
    ),
    createdAt: DateTime(),
    updatedAt: DateTime(),
  }),
);
export type DynamicContentView = Static<typeof DynamicContentSchema>;

const Trigger = Type.Object(
  {
    on: StringEnum(["load", "exit_intent", "scroll", "delay"]),
    value: Type.Optional(
      Nullable(
        Type.Integer({
          minimum: 1,
          maximum: 3600,
          description: "scroll: percent of the page (1-100); delay: seconds",
        }),
      ),
    ),
  },
  { additionalProperties: false },
);
const Rules = Type.Object(
  {
    urls: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 500 }), {
        maxItems: 20,
        description: "Shown only on pages whose address contains one of these (none: every page)",
      }),
    ),
    frequency: Type.Optional(
      Nullable(
        Type.Object(
          {
            maxViews: Type.Integer({ minimum: 1, maximum: 100 }),
            perDays: Type.Integer({ minimum: 1, maximum: 365 }),
          },
          { additionalProperties: false, description: "At most maxViews to one visitor in perDays days" },
        ),
      ),
    ),
    segmentId: Type.Optional(Nullable(Id)),
  },
  { additionalProperties: false },
);

export const FocusItemSchema = Component(
  "FocusItem",
  Type.Object({
    id: Type.String(),
    name: Type.String(),
    type: StringEnum(["bar", "modal", "slide_in"]),
    content: Type.String(),
    formId: Nullable(Type.String()),
    trigger: Type.Object({ on: Type.String(), value: Nullable(Type.Integer()) }),
    rules: Type.Object({
      urls: Type.Array(Type.String()),
      frequency: Nullable(Type.Object({ maxViews: Type.Integer(), perDays: Type.Integer() })),
      segmentId: Nullable(Type.String()),
    }),
    active: Type.Boolean(),
    views: Type.Integer({ description: "Times the website script showed it" }),
    conversions: Type.Integer({ description: "Times its form was submitted from it" }),
    createdAt: DateTime(),
    updatedAt: DateTime(),
  }),
);
export type FocusItemView = Static<typeof FocusItemSchema>;

const focusBody = {
  name: Trimmed({ minLength: 1, maxLength: 200 }),
  type: StringEnum(["bar", "modal", "slide_in"]),
  content: Type.String({ maxLength: 100_000, description: "The widget's HTML" }),
  formId: Type.Optional(Nullable(Id)),
  trigger: Trigger,
  rules: Type.Optional(Rules),
  active: Type.Boolean({ default: true }),
};

/** A browser's PushSubscription, as its toJSON() gives it. */
export const WebSubscription = Type.Object(
  {
    endpoint: WebPushEndpoint,
    expirationTime: Type.Optional(Nullable(Type.Number())),
    keys: WebPushKeys,
  },
  { additionalProperties: false, description: "The browser's PushSubscription, as its toJSON() gives it" },
);
export type WebSubscription = Static<typeof WebSubscription>;

export const schemas = {
  list: Params({
    workspaceId: Id,
    ...PageQuery,
    status: Type.Optional(StringEnum(["draft", "published"])),
    search: Type.Optional(
      Type.String({ minLength: 1, maxLength: 200, description: "Part of the name or slug" }),
    ),
  }),
  create: Params({ workspaceId: Id, ...pageBody }),
  get: Params({ workspaceId: Id, landingPageId: Id }),
  replace: Params({ workspaceId: Id, landingPageId: Id, ...pageBody }),
  dynamicList: Params({
    workspaceId: Id,
    ...PageQuery,
    search: Type.Optional(
      Type.String({ minLength: 1, maxLength: 200, description: "Part of the name or slot" }),
    ),
  }),
  dynamicUpsert: Params({
    workspaceId: Id,
    name: Trimmed({ minLength: 1, maxLength: 200 }),
    slot: Slot,
    defaultContent: Type.String({ maxLength: 100_000, default: "" }),
    variants: Type.Array(
      Type.Object(
        { filter: Filter, content: Type.String({ maxLength: 100_000 }) },
        { additionalProperties: false },
      ),
      {
        maxItems: 20,
        default: [],
        description: "In order: the first whose filter matches the contact renders",
      },
    ),
  }),
  dynamicFor: Params({
    contactIds: Type.Array(Id, { maxItems: 1000 }),
    slots: Type.Array(Type.String({ maxLength: 100 }), { maxItems: 50 }),
  }),
  focusList: Params({
    workspaceId: Id,
    ...PageQuery,
    active: Type.Optional(Type.Boolean()),
    type: Type.Optional(StringEnum(["bar", "modal", "slide_in"])),
  }),
  focusCreate: Params({ workspaceId: Id, ...focusBody }),
  focusGet: Params({ workspaceId: Id, focusItemId: Id }),
  focusPatch: Params({
    workspaceId: Id,
    focusItemId: Id,
    name: Type.Optional(focusBody.name),
    type: Type.Optional(focusBody.type),
    content: Type.Optional(focusBody.content),
    formId: focusBody.formId,
    trigger: Type.Optional(Trigger),
    rules: Type.Optional(Rules),
    active: Type.Optional(Type.Boolean()),
  }),
  scriptConfig: Params({
    key: Type.Optional(SiteKey),
    page: Type.Optional(PageToken),
    visitorToken: Type.Optional(VisitorToken),
  }),
  scriptEvent: Params({
    key: Type.Optional(SiteKey),
    page: Type.Optional(PageToken),
    type: Type.String({
      pattern: "^[A-Za-z0-9_.:-]{1,100}$",
      errorMessage: "must be 1-100 letters, digits and _ . : -",
    }),
    sessionId: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    visitorToken: Type.Optional(VisitorToken),
    pageUrl: Type.Optional(Type.String({ maxLength: 2048 })),
    referrer: Type.Optional(Type.String({ maxLength: 2048 })),
    utmSource: Type.Optional(Type.String({ maxLength: 200 })),
    utmMedium: Type.Optional(Type.String({ maxLength: 200 })),
    utmCampaign: Type.Optional(Type.String({ maxLength: 200 })),
    metadata: Type.Optional(
      Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.String({ maxLength: 10_000 })], {
        description: "An object, or its JSON (a form-encoded post)",
      }),
    ),
  }),
  scriptStream: Params({
    key: Type.Optional(SiteKey),
    page: Type.Optional(PageToken),
    visitorToken: Type.Optional(VisitorToken),
    slots: Type.Optional(
      Type.String({ maxLength: 1000, description: "Dynamic content slots the page shows, comma-separated" }),
    ),
  }),
  scriptPush: Params({
    key: Type.Optional(SiteKey),
    page: Type.Optional(PageToken),
    visitorToken: Type.Optional(VisitorToken),
    subscription: Type.Union([
      WebSubscription,
      Type.String({
        minLength: 2,
        maxLength: 5_000,
        description:
          "The same as JSON text: how the website script's form-encoded post (no CORS preflight) sends it",
      }),
    ]),
    previousEndpoint: Type.Optional(
      Type.String({
        maxLength: 2000,
        description:
          "A renewal (the worker's pushsubscriptionchange): the endpoint of the subscription it replaces",
      }),
    ),
    previousAuth: Type.Optional(
      Type.String({
        maxLength: 200,
        description:
          "With previousEndpoint: that subscription's auth secret, which proves the browser held it",
      }),
    ),
  }),
  scriptPrefill: Params({
    key: Type.Optional(SiteKey),
    page: Type.Optional(PageToken),
    formId: Id,
    visitorToken: Type.Optional(VisitorToken),
  }),
  serve: Params({
    workspaceSlug: Type.String({ minLength: 1, maxLength: 100 }),
    slug: Type.String({ minLength: 1, maxLength: 100 }),
  }),
};

export const results = {
  landingPage: LandingPageSchema,
  list: Paginated(LandingPageSchema),
  removed: Type.Object({ success: Type.Boolean() }),
  dynamic: DynamicContentSchema,
  focusItem: FocusItemSchema,
  scriptConfig: Type.Object({
    focusItems: Type.Array(
      Type.Composite([
        Type.Pick(FocusItemSchema, ["id", "name", "type", "content", "formId", "trigger"]),
        Type.Object({ rules: Type.Omit(FocusItemSchema.properties.rules, ["segmentId"]) }),
      ]),
    ),
    forms: Type.Array(Type.Object({ id: Type.String(), name: Type.String(), embedUrl: Type.String() })),
    vapidPublicKey: Nullable(Type.String()),
  }),
  scriptEvent: Type.Object({ eventId: Type.String() }),
  pushSubscription: PushSubscriptionSchema,
  scriptPrefill: Type.Object({ fields: Type.Record(Type.String(), Type.Unknown()) }),
  focusList: Paginated(FocusItemSchema),
  dynamicList: Paginated(DynamicContentSchema),
  dynamicFor: Type.Record(Type.String(), Type.Record(Type.String(), Type.String()), {
    description: "Each contact's content by slot",
  }),
};
