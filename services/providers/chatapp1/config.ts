import { Type, type Static } from "@sinclair/typebox";
import { BaseUrl, Secret, Text } from "../config-fields";

/** `chatapp1` (Telegram Bot API) settings (contract 4). */
export const chatapp1Config = Type.Object(
  {
    botToken: Secret("The bot's token from @BotFather"),
    botUsername: Type.Optional(Text(64, "The bot's username, filled from Telegram's getMe when connected")),
    webhookSecret: Type.Optional(
      Secret(
        "The `secret_token` Telegram sends back in `X-Telegram-Bot-Api-Secret-Token`; generated when the bot is connected, never set by the caller",
      ),
    ),
    baseUrl: BaseUrl,
  },
  { additionalProperties: false },
);
export type Chatapp1Config = Static<typeof chatapp1Config>;

/** Sealed at rest, masked in every answer, opened only in the process that uses them. */
export const CHATAPP1_SECRET_FIELDS = ["botToken", "webhookSecret"] as const;

/** The Bot API's own address (tests and self-hosted Bot API servers set `baseUrl`). */
export const DEFAULT_BASE_URL = "https://api.telegram.org";
