import { SCOPES } from "../../lib/access";

const wsId = { type: "string", min: 1, max: 64 } as const;

export const schemas = {
  register: {
    $$strict: "remove",
    name: { type: "string", min: 1, max: 100, trim: true },
    email: { type: "email", normalize: true, max: 254 },
    password: { type: "string", min: 8, max: 256 },
  },
  forgotPassword: { $$strict: "remove", email: { type: "email", normalize: true, max: 254 } },
  resetPassword: {
    $$strict: "remove",
    token: { type: "string", min: 1, max: 200 },
    password: { type: "string", min: 8, max: 256 },
  },
  listKeys: { $$strict: "remove", workspaceId: wsId },
  createKey: {
    $$strict: "remove",
    workspaceId: wsId,
    name: { type: "string", min: 1, max: 100, trim: true },
    scopes: { type: "array", items: { type: "enum", values: [...SCOPES, "*"] }, max: 64, optional: true, default: [] },
    expiresAt: { type: "date", convert: true, optional: true, nullable: true },
  },
  revokeKey: { $$strict: "remove", workspaceId: wsId, keyId: { type: "string", max: 64 } },
  verifyApiKey: { keyHash: { type: "string", length: 64 } },
  touchApiKey: { id: "string" },
  sessionActive: { userId: "string", sessionId: "string", issuedAt: "number" },
} as const;
