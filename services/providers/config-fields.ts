import { Type } from "@sinclair/typebox";
import { importPKCS8, SignJWT } from "jose";

/** The config fields provider types share (each `<type>/config.ts` builds its schema from them). */

export const Text = (maxLength: number, description?: string) =>
  Type.String({ minLength: 1, maxLength, description });

export const Secret = (description: string, maxLength = 4096) =>
  Type.String({ minLength: 1, maxLength, description: `${description}. Secret: answered masked` });

export const BaseUrl = Type.Optional(
  Type.String({
    format: "uri",
    pattern: "^https?://",
    maxLength: 2048,
    description: "The API's address; the provider's own when absent",
  }),
);

export const Phone = Text(32, "The sender: a number in E.164 or an alphanumeric sender id");

/** A PKCS#8 PEM key field's check: it imports and signs a JWT with `alg` (jose checks the key's type and curve). */
export async function signsAs(pem: string, alg: "RS256" | "ES256"): Promise<void> {
  await new SignJWT({}).setProtectedHeader({ alg }).sign(await importPKCS8(pem, alg));
}
