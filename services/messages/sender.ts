import type { LoggerInstance, ServiceBroker } from "moleculer";
import { SYSTEM } from "../../lib/access";
import { config } from "../../lib/config";
import { compose, renderableOf, type Renderable } from "../templates/compose";
import { TemplateFault, type Content } from "../templates/render";
import type { ResolvedTemplate } from "../templates/templates.schemas";
import { preferencesUrl, signLinkToken, unsubscribeUrl } from "./links";
import * as repo from "./messages.repo";
import type { MessageRow } from "./messages.repo";
import { logProvider, ProviderError, providerTurn, type Provider } from "./providers";
import { addOpenPixel, rewriteLinks, trackableLinks } from "./tracking";

/**
 * The send worker: claims due messages (any replica, SKIP LOCKED, with a
 * lease), renders each for its contact, sends it through the provider and
 * records the outcome. The message id is the provider's idempotency key, so
 * a send re-claimed after a crash is not delivered twice by providers that
 * honour one; `markSent` only records for the claim that holds the message.
 */

/** Sends in flight per batch. */
const CONCURRENCY = 20;
/** How long a send waits for its provider's rate limit before handing the message back to the queue. */
const MAX_RATE_WAIT_MS = 2000;

interface WorkspaceInfo {
  name: string;
  slug: string;
  settings?: {
    defaultLocale?: string;
    tracking?: { opens?: boolean; clicks?: boolean } | null;
  };
}

export interface PassResult {
  sent: number;
  failed: number;
  retried: number;
}

export class Sender {
  private readonly provider: Provider;

  constructor(
    private readonly broker: ServiceBroker,
    private readonly logger: LoggerInstance,
  ) {
    this.provider = logProvider(logger);
  }

  /** One pass: claim up to `limit` due sends and send them. */
  async pass(limit = config().messageBatch): Promise<PassResult> {
    const rows = await repo.claimDue(limit, config().messageLeaseMs);
    const result: PassResult = { sent: 0, failed: 0, retried: 0 };
    if (!rows.length) return result;
    const byWorkspace = new Map<string, MessageRow[]>();
    for (const row of rows)
      byWorkspace.set(row.workspace_id, [...(byWorkspace.get(row.workspace_id) ?? []), row]);
    for (const [ws, batch] of byWorkspace) await this.sendBatch(ws, batch, result);
    return result;
  }

  private call<T>(ws: string, action: string, params: object): Promise<T> {
    return this.broker.call(action, params, { meta: { principal: SYSTEM, workspaceId: ws } }) as Promise<T>;
  }

  private async sendBatch(ws: string, rows: MessageRow[], result: PassResult): Promise<void> {
    const contactIds = [...new Set(rows.map((r) => r.contact_id).filter((id): id is string => !!id))];
    const templateIds = [...new Set(rows.map((r) => r.template_id).filter((id): id is string => !!id))];
    const [workspace, contacts, templates] = await Promise.all([
      this.call<WorkspaceInfo>(ws, "workspaces.get", { workspaceId: ws }),
      this.call<Array<Record<string, unknown> & { id: string }>>(ws, "contacts.forSend", { contactIds }),
      Promise.all(
        templateIds.map((templateId) =>
          this.call<ResolvedTemplate>(ws, "templates.resolve", { templateId }).catch(() => null),
        ),
      ),
    ]);
    const contactById = new Map(contacts.map((c) => [c.id, c]));
    const templateById = new Map(
      templates.filter((t): t is ResolvedTemplate => !!t).map((t) => [t.template.id, t] as const),
    );
    let next = 0;
    const worker = async () => {
      while (next < rows.length) {
        const row = rows[next++];
        const outcome = await this.sendOne(row, workspace, contactById, templateById);
        result[outcome] += 1;
      }
    };
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, rows.length) }, worker));
  }

  private async sendOne(
    row: MessageRow,
    workspace: WorkspaceInfo,
    contactById: Map<string, Record<string, unknown> & { id: string }>,
    templateById: Map<string, ResolvedTemplate>,
  ): Promise<keyof PassResult> {
    try {
      const template = this.renderableOf(row, templateById);
      if (!template) {
        await repo.markFailed(row, "The template no longer exists");
        return "failed";
      }
      const contact = row.contact_id ? (contactById.get(row.contact_id) ?? null) : null;
      const composed = await compose(template, {
        locale: row.template_id ? undefined : (row.locale ?? undefined),
        contact: contact ?? { id: null, email: row.channel === "email" ? row.to_address : null },
        defaultLocale: workspace.settings?.defaultLocale ?? "en",
        workspace: { name: workspace.name, slug: workspace.slug },
        variables: row.variables,
        ...this.links(row),
      });
      const content =
        row.channel === "email" ? await this.tracked(row, composed.content, workspace) : composed.content;
      const wait = await providerTurn(this.provider.type, MAX_RATE_WAIT_MS);
      if (wait > 0) {
        await repo.release(row, new Date(Date.now() + wait));
        return "retried";
      }
      const { providerMessageId } = await this.provider.send({
        messageId: row.id,
        channel: row.channel,
        to: row.to_address,
        content,
        headers: this.headers(row),
      });
      await repo.markSent(row, {
        providerType: this.provider.type,
        providerId: this.provider.id,
        providerMessageId,
        content,
        locale: composed.locale,
        variant: composed.variant,
      });
      return "sent";
    } catch (err) {
      return this.failed(row, err);
    }
  }

  private renderableOf(row: MessageRow, templateById: Map<string, ResolvedTemplate>): Renderable | null {
    if (!row.template_id)
      return {
        id: null,
        channel: row.channel,
        locale: row.locale ?? "en",
        content: row.content ?? {},
        translations: {},
        ab: null,
      };
    const resolved = templateById.get(row.template_id);
    return resolved ? renderableOf(resolved) : null;
  }

  /** The contact's unsubscribe and preference links (contract 6), signed for this message. */
  private links(row: MessageRow): { unsubscribeUrl?: string; preferencesUrl?: string } {
    if (!row.contact_id) return {};
    const base = { ws: row.workspace_id, sub: row.contact_id };
    return {
      unsubscribeUrl: unsubscribeUrl(
        signLinkToken({ typ: "unsubscribe", ...base, ch: row.channel, mid: row.id }),
      ),
      preferencesUrl: preferencesUrl(signLinkToken({ typ: "preferences", ...base })),
    };
  }

  /** RFC 8058 one-click unsubscribe on every non-transactional email to a contact. */
  private headers(row: MessageRow): Record<string, string> {
    if (row.channel !== "email" || row.transactional || !row.contact_id) return {};
    const url = this.links(row).unsubscribeUrl as string;
    return { "List-Unsubscribe": `<${url}>`, "List-Unsubscribe-Post": "List-Unsubscribe=One-Click" };
  }

  /** Email HTML with its links through short links and an open pixel, as `settings.tracking` allows (both on by default). */
  private async tracked(row: MessageRow, content: Content, workspace: WorkspaceInfo): Promise<Content> {
    const html = typeof content.html === "string" ? content.html : null;
    if (!html) return content;
    const tracking = workspace.settings?.tracking ?? {};
    let out = html;
    if (tracking.clicks !== false) {
      const urls = trackableLinks(out, config().publicUrl);
      const codes = await repo.shortLinkCodes(row.workspace_id, row.template_id, row.campaign_id, urls);
      out = rewriteLinks(out, row.id, codes);
    }
    if (tracking.opens !== false) out = addOpenPixel(out, row.id);
    return { ...content, html: out };
  }

  private async failed(row: MessageRow, err: unknown): Promise<keyof PassResult> {
    const message = err instanceof Error ? err.message : String(err);
    const permanent = err instanceof TemplateFault || (err instanceof ProviderError && !err.transient);
    const delays = config().messageRetryDelaysMs;
    if (permanent || row.attempts > delays.length) {
      await repo.markFailed(row, message);
      return "failed";
    }
    this.logger.warn(`Send of message ${row.id} failed (attempt ${row.attempts}), retrying: ${message}`);
    await repo.retryAt(row, new Date(Date.now() + delays[row.attempts - 1]), message);
    return "retried";
  }
}
