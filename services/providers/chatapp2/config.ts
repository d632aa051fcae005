import { Type, type Static } from "@sinclair/typebox";
import { BaseUrl, Secret, Text } from "../config-fields";

/** The Graph API version the wire speaks when no `baseUrl` is set. */
export const GRAPH_URL = "https://graph.facebook.com/v19.0";

/** A Graph object id: digits only, so it is safe as a path segment. */
const GraphId = (description: string) =>
  Type.String({
    minLength: 1,
    maxLength: 64,
    pattern: "^[0-9]+$",
    errorMessage: "must be digits",
    description,
  });

/** `chatapp2` (WhatsApp Cloud API) settings (contract 4). */
export const chatapp2Config = Type.Object(
  {
    phoneNumberId: GraphId("The business phone number's id (WhatsApp Manager, API setup)"),
    businessAccountId: GraphId("The WhatsApp Business Account's id: its message templates are synced"),
    accessToken: Secret(
      "A system user's access token with whatsapp_business_messaging and whatsapp_business_management",
    ),
    appSecret: Secret("The Meta app's secret: every callback is signed with it (X-Hub-Signature-256)"),
    verifyToken: Text(
      256,
      "Any string of yours, also pasted into the app's webhook settings (the GET handshake)",
    ),
    baseUrl: BaseUrl,
  },
  { additionalProperties: false },
);
export type Chatapp2Config = Static<typeof chatapp2Config>;

/** Sealed at rest, masked in every answer, opened only in the process that uses them. */
export const CHATAPP2_SECRET_FIELDS = ["accessToken", "appSecret"] as const;

/** The Graph API root of a config, without a trailing slash. */
export const graphRoot = (config: { baseUrl?: string }) => (config.baseUrl ?? GRAPH_URL).replace(/\/$/, "");
