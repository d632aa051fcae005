import type { Channel } from "../../lib/channels";
import type { ResolvedTemplate } from "./templates.schemas";
import {
  finishEmail,
  overlay,
  prepareEmail,
  pickLocale,
  pickVariant,
  renderContent,
  renderScope,
  type Content,
} from "./render";

/**
 * From a stored template to what one contact receives: the locale it reads
 * (contract 2's pick order), its A/B variant, the content they overlay, the
 * Liquid render, and for email its preparation (CSS inlined and a text part,
 * once per template text) and finishing (the preheader). The
 * same steps serve previews, test sends and real sends, so they cannot disagree.
 */

export interface Renderable {
  id: string | null;
  channel: Channel;
  locale: string;
  content: Content;
  translations: Record<string, Content>;
  ab: { variants: Array<{ id: string; weight: number; content?: Content }>; winner: string | null } | null;
}

/** A stored template (with its translations and A/B test) as the renderer takes it. */
export const renderableOf = (resolved: ResolvedTemplate): Renderable => ({
  id: resolved.template.id,
  channel: resolved.template.channel,
  locale: resolved.template.locale,
  content: resolved.template.content as Content,
  translations: resolved.translations,
  ab: resolved.ab,
});

export interface ComposeOptions {
  /** Forces a locale (preview, send-test); else the contact's pick. */
  locale?: string;
  /** Forces a variant (preview, send-test); else the contact's assignment. */
  variant?: string;
  contact: Record<string, unknown> & { id?: string | null; locale?: string | null };
  defaultLocale: string;
  workspace: { name: string; slug: string };
  variables?: Record<string, unknown>;
  event?: Record<string, unknown> | null;
  campaign?: { id: string; name: string } | null;
  unsubscribeUrl?: string;
  preferencesUrl?: string;
  /** The contact's content of each dynamic content slot the template names (content.dynamicFor). */
  dynamic?: Record<string, string>;
}

export interface Composed {
  locale: string;
  variant: string | null;
  content: Content;
}

/** Locale and variant, and the unrendered content they make. */
export function choose(
  template: Renderable,
  options: Pick<ComposeOptions, "locale" | "variant" | "contact" | "defaultLocale">,
) {
  const locales = Object.keys(template.translations);
  const locale = options.locale
    ? pickLocale(template.locale, locales, options.locale, template.locale)
    : pickLocale(template.locale, locales, options.contact.locale, options.defaultLocale);
  const variants = template.ab?.variants ?? [];
  const variant =
    options.variant && variants.some((v) => v.id === options.variant)
      ? options.variant
      : template.id && options.contact.id
        ? pickVariant(template.id, options.contact.id, variants, template.ab?.winner)
        : (template.ab?.winner ?? variants[0]?.id ?? null);
  const translated =
    locale === template.locale ? template.content : overlay(template.content, template.translations[locale]);
  const content = overlay(translated, variants.find((v) => v.id === variant)?.content);
  return { locale, variant, content };
}

export async function compose(template: Renderable, options: ComposeOptions): Promise<Composed> {
  const { locale, variant, content } = choose(template, options);
  const scope = renderScope(
    {
      contact: options.contact,
      workspace: options.workspace,
      event: options.event ?? null,
      campaign: options.campaign ?? null,
      unsubscribeUrl: options.unsubscribeUrl ?? "",
      preferencesUrl: options.preferencesUrl ?? "",
      dynamic: options.dynamic ?? {},
    },
    options.variables,
  );
  const email = template.channel === "email";
  const rendered = await renderContent(email ? prepareEmail(content) : content, scope);
  delete rendered.mjml;
  return { locale, variant, content: email ? finishEmail(rendered) : rendered };
}

/**
 * An email template's source in a locale and variant, prepared as every
 * send of it is: what a batched send cuts into the shared body.
 */
export function emailSource(
  template: Renderable,
  locale: string,
  variant: string | null,
  defaultLocale: string,
): Content {
  const { content } = choose(template, {
    locale,
    variant: variant ?? undefined,
    contact: { id: null },
    defaultLocale,
  });
  return prepareEmail(content);
}

/** The contact a preview renders for when none is named. */
export const SAMPLE_CONTACT = {
  id: null,
  email: "alex.sample@example.com",
  phone: "+15555550100",
  firstName: "Alex",
  lastName: "Sample",
  externalId: null,
  locale: null,
  timezone: "UTC",
  country: "US",
  city: "Springfield",
  tags: [],
  stage: "lead",
  score: 0,
  attributes: {},
  customFields: {},
};
