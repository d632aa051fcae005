import type { ServiceBroker } from "moleculer";
import type { AppContext } from "../../lib/moleculer-types";
import { forbidden, validationError, type ErrorData } from "../../lib/errors";
import { newId } from "../../lib/crypto";
import { ownOrListedOrigin } from "../../lib/origins";
import { consume } from "../../lib/rate-limit";
import { systemCall } from "../../lib/system-call";
import { assetDownloadUrl, confirmUrl, signLinkToken } from "../messages/links";
import { contactWriteOf, readSubmission } from "./form-fields";
import * as repo from "./forms.repo";
import type { FormView, results } from "./forms.schemas";
import type { Static } from "@sinclair/typebox";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * A visitor's submission (contract 10): checked, its contact found by email
 * or created (blank answers never empty a known field), stored with proof of
 * consent, recorded as `form.submitted` through the events chain (segments,
 * campaign triggers, scoring), which gives each subscribed endpoint exactly
 * one delivery `{formId, submissionId, fields}`. A double opt-in form asks
 * for consent by a confirm mail instead of writing it.
 */

export type Submitted = Static<typeof results.submitted>;

/** Ten submissions a minute per address and form. */
const SUBMIT_LIMIT = { name: "form-submit", points: 10, durationSeconds: 60 };

export interface Visitor {
  ip: string | null;
  userAgent: string | null;
  origin: string | null;
}

/** The workspace's `allowedOrigins`: the sites that may post its forms and be sent to after. */
export async function allowedOriginsOf(ctx: AppContext, workspaceId: WorkspaceId): Promise<string[] | null> {
  const workspace = await systemCall<{
    settings?: { allowedOrigins?: string[] | null };
  }>(ctx, workspaceId, "workspaces.get", { workspaceId });
  return workspace.settings?.allowedOrigins ?? null;
}

/**
 * Origins a form may be posted from: the service's own, the workspace's
 * allowed ones, and `null`, a sandboxed document's (our landing pages are
 * served sandboxed). The check keeps other sites from drawing the form in
 * browsers; it is no barrier to scripts, which the rate limit holds.
 */
export function originAllowed(origin: string | null, allowedOrigins: string[] | null | undefined): boolean {
  return !origin || origin === "null" || ownOrListedOrigin(origin, allowedOrigins);
}

/** A URL the workspace may send visitors to: on the service's own origin or an allowed one (no open redirect). */
export function redirectAllowed(url: string, allowedOrigins: string[] | null | undefined): boolean {
  let origin: string;
  try {
    origin = new URL(url).origin;
  } catch {
    return false;
  }
  return ownOrListedOrigin(origin, allowedOrigins);
}

const call = <T>(broker: ServiceBroker, workspaceId: WorkspaceId, action: string, params: object) =>
  systemCall<T>(broker, workspaceId, action, params);

export async function submitForm(
  broker: ServiceBroker,
  form: repo.PublicForm,
  body: Record<string, unknown>,
  visitor: Visitor,
): Promise<Submitted> {
  if (!form.active) throw forbidden("This form is not accepting submissions");
  if (!originAllowed(visitor.origin, form.allowedOrigins))
    throw forbidden("This site may not post this form: add its origin to the workspace's allowedOrigins");
  await consume(SUBMIT_LIMIT, `${form.id}:${visitor.ip ?? "unknown"}`);
  const answer = (submissionId: string, contactId: string | null): Submitted => ({
    submissionId,
    contactId,
    message: form.settings.successMessage,
    redirectUrl:
      form.settings.assetId && contactId
        ? assetDownloadUrl(
            form.settings.assetId,
            signLinkToken({ typ: "asset", ws: form.workspaceId, sub: contactId }),
          )
        : (form.settings.redirectUrl ?? null),
    visitorToken: contactId ? signLinkToken({ typ: "visitor", ws: form.workspaceId, sub: contactId }) : null,
  });
  // A robot filled the field people cannot see: it is told it worked, and nothing is kept.
  if (typeof body._hp === "string" ? body._hp.trim() : body._hp) return answer(newId(), null);

  const { values, issues } = readSubmission(form.fields, body);
  if (issues.length) throw validationError("The submission is invalid", issues);
  const write = contactWriteOf(form.fields, values);
  const doubleOptIn = form.settings.doubleOptIn;
  const contactId = await contactOf(broker, form.workspaceId, write, doubleOptIn);
  const submissionId = await repo.insertSubmission({
    workspaceId: form.workspaceId,
    formId: form.id,
    contactId,
    fields: values,
    pageUrl: typeof body.pageUrl === "string" ? body.pageUrl : null,
    ip: visitor.ip,
    userAgent: visitor.userAgent,
    consent: write.consent.map((c) => ({
      ...c,
      status: doubleOptIn && contactId ? "pending_confirmation" : "opted_in",
    })),
  });
  // The submission stands without its confirm mail (no sender set, say): its consent stays pending.
  if (doubleOptIn && contactId && write.consent.length)
    await sendConfirmMail(
      broker,
      form,
      contactId,
      write.consent.map((c) => c.channel),
    ).catch((err: Error) =>
      broker.getLogger("forms").warn(`Form ${form.id}: the confirm mail could not be queued: ${err.message}`),
    );
  // The visitor is identified: its session's anonymous page views become the contact's.
  if (contactId && typeof body.sessionId === "string" && body.sessionId)
    await call(broker, form.workspaceId, "events.claimSession", { sessionId: body.sessionId, contactId });
  await call(broker, form.workspaceId, "events.record", {
    type: "form.submitted",
    contactId,
    metadata: { formId: form.id, submissionId, fields: values },
    sessionId: typeof body.sessionId === "string" ? body.sessionId : undefined,
    pageUrl: typeof body.pageUrl === "string" ? body.pageUrl : undefined,
    fact: { formId: form.id, submissionId, fields: values },
  });
  return answer(submissionId, contactId);
}

/** The submission's contact (null when no field identifies one); a value the contact refuses is the form key's 400. */
async function contactOf(
  broker: ServiceBroker,
  workspaceId: WorkspaceId,
  write: ReturnType<typeof contactWriteOf>,
  doubleOptIn: boolean,
): Promise<string | null> {
  const { contact } = write;
  if (!contact.email && !contact.phone && !contact.externalId) return null;
  const consent = doubleOptIn
    ? undefined
    : Object.fromEntries(write.consent.map((c) => [c.channel, "opted_in" as const]));
  try {
    const { contactId } = await call<{ contactId: string }>(broker, workspaceId, "contacts.identify", {
      contact,
      consent,
      source: "form",
    });
    return contactId;
  } catch (err) {
    const details = (err as { code?: number; data?: ErrorData }).data?.details;
    if ((err as { code?: number }).code !== 400 || !details) throw err;
    throw validationError(
      "The submission is invalid",
      details.map((d) => ({
        ...d,
        field: write.keyOf[d.field] ?? write.keyOf[d.field.split(".")[0]] ?? d.field,
      })),
    );
  }
}

/** The double opt-in mail: a confirm link per channel asked for, sent at once (transactional) through the send path. */
async function sendConfirmMail(
  broker: ServiceBroker,
  form: FormView & { workspaceId: WorkspaceId },
  contactId: string,
  channels: string[],
): Promise<void> {
  const links = channels.map((channel) => ({
    channel,
    url: confirmUrl(
      signLinkToken({
        typ: "confirm",
        ws: form.workspaceId,
        sub: contactId,
        ch: channel,
        src: "form",
        fid: form.id,
      }),
    ),
  }));
  await call(broker, form.workspaceId, "messages.create", {
    workspaceId: form.workspaceId,
    contactId,
    channel: "email",
    transactional: true,
    content: {
      subject: "Please confirm your subscription to {{ workspace.name }}",
      html:
        "<p>Please confirm that you want to hear from {{ workspace.name }}:</p>" +
        '<ul>{% for link in confirmLinks %}<li><a href="{{ link.url }}">Confirm {{ link.channel }}</a></li>{% endfor %}</ul>' +
        "<p>If you did not ask for this, ignore this mail and nothing changes.</p>",
    },
    variables: { confirmLinks: links },
  });
}
