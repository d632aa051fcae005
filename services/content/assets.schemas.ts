import { Type, type Static } from "@sinclair/typebox";
import { Paginated, PageQuery } from "../../lib/pagination";
import { Component, DateTime, Nullable, Params, Trimmed, WorkspaceIdParam } from "../../lib/schema";

const Id = Type.String({ minLength: 1, maxLength: 64 });

/** The largest file an upload may carry. */
export const ASSET_LIMIT_BYTES = 25 * 1024 * 1024;

export const AssetSchema = Component(
  "Asset",
  Type.Object({
    id: Type.String(),
    name: Type.String(),
    categoryId: Nullable(Type.String()),
    fileName: Nullable(Type.String({ description: "The uploaded file's name (none for a remote asset)" })),
    contentType: Nullable(
      Type.String({ description: "Read from the file's bytes, not from what the upload declared" }),
    ),
    size: Nullable(Type.Integer({ description: "Bytes" })),
    remoteUrl: Nullable(Type.String({ description: "Where a remote asset's download redirects" })),
    gated: Type.Boolean({
      description: "Downloads need a link token (`?token=`), which a form gating the asset hands out",
    }),
    downloads: Type.Integer(),
    downloadUrl: Type.String({ description: "{PUBLIC_URL}/api/assets/{id}/download" }),
    createdAt: DateTime(),
    updatedAt: DateTime(),
  }),
);
export type AssetView = Static<typeof AssetSchema>;

export const AssetCategorySchema = Component(
  "AssetCategory",
  Type.Object({
    id: Type.String(),
    name: Type.String(),
    assets: Type.Integer({ description: "How many assets it holds" }),
    createdAt: DateTime(),
  }),
);
export type AssetCategoryView = Static<typeof AssetCategorySchema>;

const Name = Trimmed({ minLength: 1, maxLength: 200 });
const CategoryId = Nullable(Id);
const Gated = Type.Boolean({ default: false });

/** What an upload's text fields may say (the file's own name is the default name). */
export const UploadFieldsSchema = Type.Object(
  { name: Type.Optional(Name), categoryId: Type.Optional(CategoryId), gated: Type.Optional(Gated) },
  { additionalProperties: false },
);

/** A remote asset, sent as JSON. */
export const RemoteAssetSchema = Type.Object(
  {
    name: Name,
    remoteUrl: Type.String({
      maxLength: 2000,
      pattern: "^https?://[^\\s]+$",
      errorMessage: "must be an http(s) URL",
    }),
    categoryId: Type.Optional(CategoryId),
    gated: Type.Optional(Gated),
  },
  { additionalProperties: false },
);

export const schemas = {
  list: Params({
    workspaceId: WorkspaceIdParam,
    ...PageQuery,
    categoryId: Type.Optional(Id),
    search: Type.Optional(Type.String({ maxLength: 200, description: "Part of the name or file name" })),
    sort: Type.Optional(
      Type.String({
        maxLength: 50,
        description: "createdAt (default -createdAt), name, size, downloads; - for descending",
      }),
    ),
  }),
  get: Params({ workspaceId: WorkspaceIdParam, assetId: Id }),
  update: Params({
    workspaceId: WorkspaceIdParam,
    assetId: Id,
    name: Type.Optional(Name),
    categoryId: Type.Optional(CategoryId),
    gated: Type.Optional(Type.Boolean()),
  }),
  categories: Params({ workspaceId: WorkspaceIdParam }),
  createCategory: Params({ workspaceId: WorkspaceIdParam, name: Name }),
  removeCategory: Params({ workspaceId: WorkspaceIdParam, categoryId: Id }),
  download: Params({
    assetId: Id,
    token: Type.Optional(
      Type.String({ maxLength: 2000, description: "A link token naming the visitor (asset or visitor)" }),
    ),
  }),
};

export const results = {
  list: Paginated(AssetSchema),
  asset: AssetSchema,
  categories: Type.Array(AssetCategorySchema),
  category: AssetCategorySchema,
  removed: Type.Object({ success: Type.Literal(true) }),
};

/** The create route's body (a stream route declares it by hand). */
export const createOpenApi = {
  tags: ["Assets"],
  summary: "Upload a file (multipart `file`, at most 25 MiB) or add a remote asset (JSON)",
  requestBody: {
    required: true,
    content: {
      "multipart/form-data": {
        schema: {
          type: "object",
          properties: {
            file: { type: "string", format: "binary" },
            name: { type: "string" },
            categoryId: { type: "string" },
            gated: { type: "boolean" },
          },
          required: ["file"],
        },
      },
      "application/json": { schema: RemoteAssetSchema },
    },
  },
};
