import { templateError, validationError } from "../../lib/errors";
import { schemaIssues } from "../../lib/schema";
import type { Channel } from "../../lib/channels";
import { checkLiquid, compileMjml, overlay, TemplateFault, type Content } from "./render";
import { contentSchemas } from "./templates.schemas";

/**
 * What a save checks: the channel's content shape (400 VALIDATION_ERROR
 * naming the field), MJML compiled into `html`, and every Liquid text parsed
 * (400 TEMPLATE_ERROR with the field and line).
 */

/** An email written in MJML may also arrive in `html`; it is kept as `mjml` and compiled. */
function normalizeEmail(content: Content): Content {
  const html = typeof content.html === "string" ? content.html.trimStart() : "";
  if (content.mjml === undefined && html.startsWith("<mjml")) return { ...content, mjml: html, html: null };
  return content;
}

function checkShape(channel: Channel, content: Content, prefix: string): void {
  const issues = schemaIssues(contentSchemas[channel] as unknown as Record<string, unknown>, content);
  if (!issues.length) return;
  const details = issues.map((i) => ({ ...i, field: i.field ? `${prefix}.${i.field}` : prefix }));
  throw validationError(`${details[0].field} ${details[0].message}`, details);
}

async function compiled(channel: Channel, content: Content, prefix: string): Promise<Content> {
  try {
    const ready = channel === "email" ? await compileMjml(normalizeEmail(content), prefix) : content;
    checkLiquid(ready, prefix);
    return ready;
  } catch (err) {
    if (err instanceof TemplateFault) throw templateError(err.details);
    throw err;
  }
}

/** A template's full content, ready to store. */
export async function prepareContent(
  channel: Channel,
  content: Content,
  prefix = "content",
): Promise<Content> {
  checkShape(channel, normalizeEmail(content), prefix);
  return compiled(channel, content, prefix);
}

/**
 * A partial content (a translation, an A/B variant) over `base`: the whole
 * must be a valid content of the channel; the partial is what is stored.
 */
export async function preparePartial(
  channel: Channel,
  base: Content,
  partial: Content,
  prefix = "content",
): Promise<Content> {
  const known = Object.keys(
    (contentSchemas[channel] as { properties?: Record<string, unknown> }).properties ??
      Object.assign(
        {},
        ...((contentSchemas[channel] as { anyOf?: Array<{ properties: object }> }).anyOf ?? []).map(
          (b) => b.properties,
        ),
      ),
  );
  for (const key of Object.keys(partial)) {
    if (!known.includes(key))
      throw validationError(`${prefix}.${key} is not a ${channel} content field`, [
        { field: `${prefix}.${key}`, message: `is not a ${channel} content field` },
      ]);
  }
  const ready = await compiled(channel, partial, prefix);
  checkShape(channel, normalizeEmail(overlay(base, ready)), prefix);
  return ready;
}
