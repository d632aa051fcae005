import { Type, type Static } from "@sinclair/typebox";
import { fieldError } from "../../../lib/errors";
import { BaseUrl, Secret, signsAs, Text } from "../config-fields";

const AppleId = (description: string) =>
  Type.String({
    pattern: "^[A-Z0-9]{10}$",
    errorMessage: "must be the 10 letters and digits Apple shows",
    description,
  });

/** `pushgw2` (APNs, token-based) settings (contract 4). */
export const pushgw2Config = Type.Object(
  {
    teamId: AppleId("The Apple developer team id (the provider token's issuer)"),
    keyId: AppleId("The id of the APNs auth key (.p8)"),
    privateKey: Secret("The APNs auth key: the .p8 file's PEM text"),
    bundleId: Text(255, "The app's bundle id (the apns-topic)"),
    production: Type.Boolean({
      description: "true: api.push.apple.com (App Store and TestFlight builds); false: the sandbox",
    }),
    baseUrl: BaseUrl,
  },
  { additionalProperties: false },
);
export type Pushgw2Config = Static<typeof pushgw2Config>;

/** Sealed at rest, masked in every answer, opened only in the process that sends. */
export const PUSHGW2_SECRET_FIELDS = ["privateKey"] as const;

/** Before storing: the key imports as an ES256 (P-256) key (a 400 naming config.privateKey). */
export async function checkPushgw2(config: Record<string, unknown>): Promise<Record<string, unknown>> {
  try {
    await signsAs(String(config.privateKey), "ES256");
  } catch {
    throw fieldError("config.privateKey", "is not an ES256 (P-256) key in PKCS#8 PEM, as the .p8 file holds");
  }
  return config;
}
