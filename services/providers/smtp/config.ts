import { Type, type Static } from "@sinclair/typebox";
import { Int32 } from "../../../lib/schema";
import { Secret, Text } from "../config-fields";

/** `smtp` (SMTP, to any mail server through a pool) settings (contract 4). */
export const smtpConfig = Type.Object(
  {
    host: Text(255),
    port: Int32({ minimum: 1, maximum: 65535 }),
    secure: Type.Optional(
      Type.Boolean({ description: "TLS from the start (465); else STARTTLS when offered" }),
    ),
    username: Type.Optional(Text(255)),
    password: Type.Optional(Secret("The SMTP password")),
    maxConnections: Type.Optional(Int32({ minimum: 1, maximum: 100, description: "Pooled connections (5)" })),
    maxMessages: Type.Optional(
      Int32({
        minimum: 1,
        maximum: 100_000,
        description: "Messages per connection before it is renewed (100)",
      }),
    ),
  },
  { additionalProperties: false },
);
export type SmtpConfig = Static<typeof smtpConfig>;

/** Sealed at rest, masked in every answer, opened only in the process that sends. */
export const SMTP_SECRET_FIELDS = ["password"] as const;
