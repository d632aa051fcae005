import { Type } from "@sinclair/typebox";

/** The config fields provider types share (each `<type>/config.ts` builds its schema from them). */

export const Text = (maxLength: number, description?: string) =>
  Type.String({ minLength: 1, maxLength, description });

export const Secret = (description: string) =>
  Type.String({ minLength: 1, maxLength: 4096, description: `${description}. Secret: answered masked` });

export const BaseUrl = Type.Optional(
  Type.String({
    format: "uri",
    pattern: "^https?://",
    maxLength: 2048,
    description: "The API's address; the provider's own when absent",
  }),
);

export const Phone = Text(32, "The sender: a number in E.164 or an alphanumeric sender id");
