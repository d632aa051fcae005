import { Type, type Static } from "@sinclair/typebox";
import { Secret, Text } from "../config-fields";

/** `vapid` (web push, RFC 8292) settings (contract 4): the workspace's application server key pair. */
export const vapidConfig = Type.Object(
  {
    publicKey: Text(200, "The public key, base64url (browsers subscribe with it)"),
    privateKey: Secret("The private key, base64url"),
    subject: Type.String({
      maxLength: 500,
      pattern: "^(mailto:[^@\\s]+@[^@\\s]+|https://\\S+)$",
      errorMessage: "must be a mailto: address or an https: URL (push services refuse other subjects)",
      description: "Who push services contact about this sender: `mailto:` or `https:`",
    }),
  },
  { additionalProperties: false },
);
export type VapidConfig = Static<typeof vapidConfig>;

/** Sealed at rest, masked in every answer, opened only in the process that sends. */
export const VAPID_SECRET_FIELDS = ["privateKey"] as const;
