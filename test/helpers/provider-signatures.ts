import crypto from "node:crypto";
import jwt from "jsonwebtoken";

/** Callback signatures made the way each provider makes them, for tests. */

/** SendGrid's event webhook key pair: the public key as SendGrid shows it (base64 DER SPKI). */
export function sendgridKeys() {
  const { privateKey, publicKey } = crypto.generateKeyPairSync("ec", { namedCurve: "prime256v1" });
  return { privateKey, publicKey: publicKey.export({ format: "der", type: "spki" }).toString("base64") };
}

/** The two headers SendGrid sends with an event batch. */
export function sendgridHeaders(
  privateKey: crypto.KeyObject,
  body: string,
  timestamp = Math.floor(Date.now() / 1000),
) {
  const signature = crypto.sign("sha256", Buffer.from(`${timestamp}${body}`), privateKey).toString("base64");
  return {
    "X-Twilio-Email-Event-Webhook-Signature": signature,
    "X-Twilio-Email-Event-Webhook-Timestamp": String(timestamp),
  };
}

/** Mailgun's `signature` object of a webhook body. */
export function mailgunSignature(signingKey: string, timestamp = Math.floor(Date.now() / 1000)) {
  const token = crypto.randomBytes(25).toString("hex");
  const signature = crypto.createHmac("sha256", signingKey).update(`${timestamp}${token}`).digest("hex");
  return { timestamp: String(timestamp), token, signature };
}

/** Twilio's `X-Twilio-Signature` of a form POST to `url`. */
export function twilioSignature(authToken: string, url: string, form: Record<string, string>) {
  const data =
    url +
    Object.keys(form)
      .sort()
      .map((name) => name + form[name])
      .join("");
  return crypto.createHmac("sha1", authToken).update(data).digest("base64");
}

/** Vonage's signed-webhook bearer token for `body`. */
export function vonageBearer(signatureSecret: string, body: string, iat = Math.floor(Date.now() / 1000)) {
  const payload_hash = crypto.createHash("sha256").update(body).digest("hex");
  return `Bearer ${jwt.sign({ iat, jti: crypto.randomUUID(), payload_hash, api_key: "vk" }, signatureSecret, { algorithm: "HS256" })}`;
}

/** Meta's `X-Hub-Signature-256` of a webhook body (WhatsApp Cloud API callbacks). */
export const hubSignature = (appSecret: string, body: string) =>
  `sha256=${crypto.createHmac("sha256", appSecret).update(body).digest("hex")}`;
