import { Type, type Static } from "@sinclair/typebox";
import { BaseUrl, Secret, Text } from "../config-fields";

/** `emailapi1` (SendGrid v3) settings (contract 4). */
export const emailapi1Config = Type.Object(
  {
    apiKey: Secret("SendGrid v3 API key"),
    webhookPublicKey: Type.Optional(Text(1024, "The event webhook's ECDSA public key (base64)")),
    baseUrl: BaseUrl,
  },
  { additionalProperties: false },
);
export type Emailapi1Config = Static<typeof emailapi1Config>;

/** Sealed at rest, masked in every answer, opened only in the process that sends. */
export const EMAILAPI1_SECRET_FIELDS = ["apiKey"] as const;
