import { Type, type Static } from "@sinclair/typebox";
import { BaseUrl, Secret, Text } from "../config-fields";

/** `emailapi2` (Mailgun) settings (contract 4). */
export const emailapi2Config = Type.Object(
  {
    apiKey: Secret("Mailgun API key"),
    domain: Text(255),
    webhookSigningKey: Type.Optional(Secret("Mailgun webhook signing key")),
    baseUrl: BaseUrl,
  },
  { additionalProperties: false },
);
export type Emailapi2Config = Static<typeof emailapi2Config>;

/** Sealed at rest, masked in every answer, opened only in the process that sends. */
export const EMAILAPI2_SECRET_FIELDS = ["apiKey", "webhookSigningKey"] as const;
