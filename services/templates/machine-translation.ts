import type { Channel } from "../../lib/channels";
import { Errors } from "moleculer";
import { escapeHtml, type Content } from "./render";

/**
 * Machine translation through a LibreTranslate-compatible API
 * (`POST {baseUrl}/translate {q: [...], source, target, format: "html", api_key}`).
 * Liquid is never sent: each `{{ … }}` and `{% … %}` travels as an empty
 * `<x-liquid>` element, which translators keep, and is put back after.
 */

export interface TranslationSettings {
  baseUrl: string;
  apiKey?: string | null;
}

const TIMEOUT_MS = 20_000;

/** The texts of a content that people read (addresses, URLs and provider template names are not translated). */
const READABLE: Record<Channel, string[]> = {
  email: ["subject", "preheader", "html", "text"],
  sms: ["body"],
  push: ["title", "body"],
  chatapp1: ["text"],
  chatapp2: ["text"],
};

const LIQUID = /\{\{[\s\S]*?\}\}|\{%[\s\S]*?%\}/g;
const unescapeHtml = (text: string) =>
  text
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&quot;/g, '"')
    .replace(/&#39;|&apos;/g, "'")
    .replace(/&amp;/g, "&");

function protect(text: string, html: boolean): { text: string; liquid: string[] } {
  const liquid: string[] = [];
  const source = html ? text : escapeHtml(text);
  const masked = source.replace(
    LIQUID,
    (token) => `<x-liquid n="${liquid.push(html ? token : unescapeHtml(token)) - 1}"></x-liquid>`,
  );
  return { text: masked, liquid };
}

function restore(text: string, liquid: string[], html: boolean): string {
  const back = text.replace(
    /<x-liquid n="(\d+)"\s*>\s*<\/x-liquid>/g,
    (_, n: string) => `\u{E000}${n}\u{E001}`,
  );
  const plain = html ? back : unescapeHtml(back);
  return plain.replace(/\u{E000}(\d+)\u{E001}/gu, (_, n: string) => liquid[Number(n)] ?? "");
}

function unavailable(message: string) {
  return new Errors.MoleculerError(message, 503, "SERVICE_UNAVAILABLE");
}

/** Translate the readable texts of `content` from `source` to `target`; other fields are left out (a partial). */
export async function translateContent(
  settings: TranslationSettings,
  channel: Channel,
  content: Content,
  source: string,
  target: string,
): Promise<Content> {
  const fields = READABLE[channel].filter(
    (f) => typeof content[f] === "string" && (content[f] as string).trim(),
  );
  const buttons =
    channel === "chatapp1" && Array.isArray(content.buttons)
      ? (content.buttons as Array<{ text: string; url: string }>)
      : [];
  const texts = [
    ...fields.map((f) => [content[f] as string, f === "html"] as const),
    ...buttons.map((b) => [b.text, false] as const),
  ];
  if (!texts.length) return {};
  const protectedTexts = texts.map(([text, html]) => protect(text, html));
  let answer: Response;
  try {
    answer = await fetch(`${settings.baseUrl.replace(/\/+$/, "")}/translate`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({
        q: protectedTexts.map((p) => p.text),
        source: source.split(/[-_]/)[0],
        target: target.split(/[-_]/)[0],
        format: "html",
        ...(settings.apiKey ? { api_key: settings.apiKey } : {}),
      }),
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
  } catch (err) {
    throw unavailable(`The translation service could not be reached: ${(err as Error).message}`);
  }
  const body = (await answer.json().catch(() => null)) as { translatedText?: unknown; error?: string } | null;
  if (!answer.ok || !Array.isArray(body?.translatedText) || body.translatedText.length !== texts.length) {
    throw unavailable(
      `The translation service answered ${answer.status}${body?.error ? `: ${body.error}` : ""}`,
    );
  }
  const translated = (body.translatedText as string[]).map((text, i) =>
    restore(String(text), protectedTexts[i].liquid, texts[i][1]),
  );
  const out: Content = {};
  fields.forEach((field, i) => (out[field] = translated[i]));
  if (buttons.length) out.buttons = buttons.map((b, i) => ({ ...b, text: translated[fields.length + i] }));
  return out;
}
