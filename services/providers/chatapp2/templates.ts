import { fieldError, invalidState } from "../../../lib/errors";

/**
 * The account's message templates (synced by `fetchApproved` in account.ts from `GET
 * /{businessAccountId}/message_templates`, every page) and the checks a
 * chatapp2 send passes before it is queued: a template send names an
 * approved template in its language with as many parameters as its body
 * has placeholders; a free-form text falls inside the 24-hour customer
 * service window the contact's last message opened.
 */

export interface SyncedTemplate {
  name: string;
  language: string;
  category: string;
  parameterCount: number;
  components: unknown[];
}

/** How long after a person's last message a business may write to them freely (WhatsApp's rule). */
export const SERVICE_WINDOW_MS = 24 * 3_600_000;

/** The distinct placeholders of a template's BODY in the order it first names them (`1`, `2`, or named `first_name`). */
function bodyPlaceholders(components: unknown[]): string[] {
  const body = components.find(
    (c): c is { type: string; text?: unknown } =>
      !!c && typeof c === "object" && String((c as { type?: unknown }).type).toUpperCase() === "BODY",
  );
  if (typeof body?.text !== "string") return [];
  return [...new Set([...body.text.matchAll(/\{\{\s*([A-Za-z0-9_]+)\s*\}\}/g)].map((m) => m[1]))];
}

export const bodyParameterCount = (components: unknown[]): number => bodyPlaceholders(components).length;

/**
 * The names of a template's body parameters, in the order its body first
 * names them, when the template uses named ones (`{{first_name}}`); null for
 * positional ones (`{{1}}`), which the API takes in order without names.
 */
export function bodyParameterNames(components: unknown[]): string[] | null {
  const placeholders = bodyPlaceholders(components);
  return placeholders.some((p) => !/^\d+$/.test(p)) ? placeholders : null;
}

/** The approved templates of a page's `data`, as we keep them. */
export function approvedOf(data: unknown[]): SyncedTemplate[] {
  return data.flatMap((item) => {
    const t = (item ?? {}) as Record<string, unknown>;
    if (t.status !== "APPROVED" || typeof t.name !== "string" || typeof t.language !== "string") return [];
    const components = Array.isArray(t.components) ? t.components : [];
    return [
      {
        name: t.name,
        language: t.language,
        category: typeof t.category === "string" ? t.category : "",
        parameterCount: bodyParameterCount(components),
        components,
      },
    ];
  });
}

export type SendContent = Record<string, unknown>;

/** A template send's content against the synced templates: 400 naming the field that does not match. */
export function checkTemplateContent(content: SendContent, templates: SyncedTemplate[]): void {
  const name = content.templateName;
  const language = content.language;
  const named = templates.filter((t) => t.name === name);
  if (!named.length)
    throw fieldError(
      "content.templateName",
      `is not an approved template of the account (sync the templates)`,
    );
  const template = named.find((t) => t.language === language);
  if (!template)
    throw fieldError(
      "content.language",
      `must be one of the template's approved languages: ${named.map((t) => t.language).join(", ")}`,
    );
  const given = Array.isArray(content.parameters) ? content.parameters.length : 0;
  if (given !== template.parameterCount)
    throw fieldError(
      "content.parameters",
      `must hold ${template.parameterCount} value(s), one per placeholder of the template's body; ${given} given`,
    );
}

/** A free-form message needs the contact to have written within 24 hours; 409 naming the rule otherwise. */
export function checkServiceWindow(lastInboundAt: Date | null, now: Date): void {
  if (lastInboundAt && now.getTime() - lastInboundAt.getTime() < SERVICE_WINDOW_MS) return;
  throw invalidState(
    "Outside the 24-hour customer service window: a free-form chatapp2 message may only answer a contact who wrote within 24 hours" +
      (lastInboundAt ? ` (last message ${lastInboundAt.toISOString()})` : " (no message from this contact)") +
      "; send an approved template instead",
  );
}

export const isTemplateContent = (content: SendContent) => typeof content.templateName === "string";
