import { Type, type Static } from "@sinclair/typebox";
import { Paginated, PageQuery } from "../../lib/pagination";
import { Component, DateTime, Nullable, Params, StringEnum, Trimmed } from "../../lib/schema";

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
  dynamicList: Paginated(DynamicContentSchema),
  dynamicFor: Type.Record(Type.String(), Type.Record(Type.String(), Type.String()), {
    description: "Each contact's content by slot",
  }),
};
