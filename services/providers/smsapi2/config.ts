import { Type, type Static } from "@sinclair/typebox";
import { BaseUrl, Phone, Secret, Text } from "../config-fields";

/** `smsapi2` (Vonage SMS API) settings (contract 4). */
export const smsapi2Config = Type.Object(
  {
    apiKey: Text(64),
    apiSecret: Secret("Vonage API secret"),
    signatureSecret: Type.Optional(Secret("Vonage signature secret (signed callbacks)")),
    from: Phone,
    baseUrl: BaseUrl,
  },
  { additionalProperties: false },
);
export type Smsapi2Config = Static<typeof smsapi2Config>;

/** Sealed at rest, masked in every answer, opened only in the process that sends. */
export const SMSAPI2_SECRET_FIELDS = ["apiSecret", "signatureSecret"] as const;
