import { Type } from "@sinclair/typebox";
import { Component, DateTime, Nullable, Params, WorkspaceIdParam } from "../../../lib/schema";

const Id = Type.String({ minLength: 1, maxLength: 64 });

export const Chatapp2TemplateSchema = Component(
  "Chatapp2Template",
  Type.Object({
    name: Type.String(),
    language: Type.String({ description: "The language code a send names (`content.language`)" }),
    category: Type.String({ description: "MARKETING, UTILITY or AUTHENTICATION" }),
    parameterCount: Type.Integer({
      description: "Placeholders in the body: a send gives exactly this many `content.parameters`",
    }),
    components: Type.Array(Type.Unknown(), {
      description: "The template's components as the provider has them",
    }),
    syncedAt: DateTime(),
  }),
);

export const chatapp2Schemas = {
  templates: Params({ workspaceId: WorkspaceIdParam }),
  sendCheck: Params({
    to: Type.Optional(
      Nullable(Type.String({ maxLength: 64, description: "The recipient's phone (E.164); absent: a batch" })),
    ),
    content: Type.Record(Type.String(), Type.Unknown()),
  }),
  handshake: Params({
    providerId: Id,
    "hub.mode": Type.Optional(Type.String({ maxLength: 64 })),
    "hub.verify_token": Type.Optional(Type.String({ maxLength: 1024 })),
    "hub.challenge": Type.Optional(Type.String({ maxLength: 1024 })),
  }),
};

export const chatapp2Results = {
  templates: Type.Array(Chatapp2TemplateSchema),
  synced: Type.Object({ synced: Type.Integer({ description: "Approved templates kept" }) }),
  sendCheck: Type.Object({
    checked: Type.Boolean({ description: "false: no chatapp2 provider, nothing to check against" }),
  }),
  handshake: {
    "200": {
      description: "The verify token matches: the challenge, as text",
      content: { "text/plain": { schema: { type: "string" } } },
    },
    "403": {
      $ref: "#/components/responses/Error",
      description: "The verify token does not match (FORBIDDEN)",
    },
  },
};
