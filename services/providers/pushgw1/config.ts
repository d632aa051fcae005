import { Type, type Static } from "@sinclair/typebox";
import { fieldError } from "../../../lib/errors";
import { BaseUrl, Secret, signsAs, Text } from "../config-fields";

/** `pushgw1` (FCM HTTP v1) settings (contract 4). */
export const pushgw1Config = Type.Object(
  {
    projectId: Text(128, "The Firebase project id (messages go to projects/{projectId}/messages:send)"),
    serviceAccount: Secret(
      "The service account's JSON key file as a string (client_email, private_key, token_uri)",
      16_384,
    ),
    baseUrl: BaseUrl,
  },
  { additionalProperties: false },
);
export type Pushgw1Config = Static<typeof pushgw1Config>;

/** Sealed at rest, masked in every answer, opened only in the process that sends. */
export const PUSHGW1_SECRET_FIELDS = ["serviceAccount"] as const;

/** What the client uses of a service account's JSON key file. */
export interface ServiceAccount {
  clientEmail: string;
  privateKey: string;
  tokenUri: string;
  privateKeyId: string | null;
}

/**
 * The service account's fields, or an Error saying which is wrong. The
 * message never quotes the text (JSON.parse's own would: it is a secret).
 */
export function readServiceAccount(json: string): ServiceAccount {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    throw new Error("is not JSON: paste the whole service account key file");
  }
  const account = (parsed && typeof parsed === "object" ? parsed : {}) as Record<string, unknown>;
  const text = (key: string) => {
    const value = account[key];
    if (typeof value !== "string" || !value) throw new Error(`has no ${key}`);
    return value;
  };
  const tokenUri = text("token_uri");
  if (!/^https?:\/\/\S+$/.test(tokenUri)) throw new Error("has a token_uri that is not an http(s) URL");
  const keyId = account.private_key_id;
  return {
    clientEmail: text("client_email"),
    privateKey: text("private_key"),
    tokenUri,
    privateKeyId: typeof keyId === "string" && keyId ? keyId : null,
  };
}

/** Before storing: the service account parses and its key signs RS256 (a 400 naming config.serviceAccount). */
export async function checkPushgw1(config: Record<string, unknown>): Promise<Record<string, unknown>> {
  let account: ServiceAccount;
  try {
    account = readServiceAccount(String(config.serviceAccount));
  } catch (err) {
    throw fieldError("config.serviceAccount", (err as Error).message);
  }
  try {
    await signsAs(account.privateKey, "RS256");
  } catch {
    throw fieldError("config.serviceAccount", "has a private_key that is not an RSA key in PKCS#8 PEM");
  }
  return config;
}
