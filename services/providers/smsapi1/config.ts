import { Type, type Static } from "@sinclair/typebox";
import { BaseUrl, Phone, Secret, Text } from "../config-fields";

/** `smsapi1` (Twilio) settings (contract 4). */
export const smsapi1Config = Type.Object(
  {
    accountSid: Text(64),
    authToken: Secret("Twilio auth token"),
    from: Phone,
    baseUrl: BaseUrl,
    providerHandlesOptOut: Type.Optional(
      Type.Boolean({
        description:
          "Twilio answers STOP, START, HELP and their like itself (its Advanced Opt-Out, on by default): the service then records the opt-out or opt-in but sends no reply of its own. Off (the default): the service replies, and a reply Twilio refuses as opted out (error 21610) is recorded suppressed",
      }),
    ),
  },
  { additionalProperties: false },
);
export type Smsapi1Config = Static<typeof smsapi1Config>;

/** Sealed at rest, masked in every answer, opened only in the process that sends. */
export const SMSAPI1_SECRET_FIELDS = ["authToken"] as const;
