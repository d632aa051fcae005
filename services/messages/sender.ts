import { countMessages, timeProviderSend } from "../../lib/business-metrics";
import type { LoggerInstance, ServiceBroker } from "moleculer";
import { config } from "../../lib/config";
import { compose, emailSource, renderableOf, type Renderable } from "../templates/compose";
import { dynamicSlotsOf, TemplateFault, type Content } from "../templates/render";
import { nullIfNotFound } from "../../lib/errors";
import { optionalStepRuns } from "../../lib/registry";
import { systemCall } from "../../lib/system-call";
import type { ResolvedTemplate } from "../templates/templates.schemas";
import {
  preferencesUrl,
  rewriteTextLinks,
  signLinkToken,
  trackableTextLinks,
  trackingUrl,
  unsubscribeUrl,
} from "./links";
import * as repo from "./messages.repo";
import type { ClaimedMessage, MessageRow, SentRecord } from "./messages.repo";
import {
  attachmentsOf,
  BATCH_KEY,
  holesOf,
  ProviderError,
  skeletonOf,
  type Accepted,
  type Outgoing,
  type ProviderClient,
} from "../providers/clients";
import type { PushClient, PushSubscriptionType } from "../providers/clients/push";
import { subscriptionsForSend, type SendTarget } from "../push/for-send";
import { applyPending } from "./provider-events";
import { ProviderDirectory, providerTurn } from "./providers";
import { notificationOf, pushToAll, verdictOf } from "./push";
import { insertPushDeliveries, type NewPushDelivery } from "./push-deliveries.repo";
import { addOpenPixel, rewriteLinks, trackableLinks } from "./tracking";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * The send worker: claims due messages (any replica, SKIP LOCKED, with a
 * lease), renders each for its contact, sends it through the provider and
 * records the outcomes of a batch in one transaction. The message id is the
 * provider's idempotency key, so a send re-claimed after a crash (before its
 * batch was recorded) is not delivered twice by providers that honour one;
 * `markSent` only records for the claim that holds the message.
 */

/** Sends in flight per batch. */
const CONCURRENCY = 20;
/** Push messages in flight per batch (each to all its contact's subscriptions at once). */
const PUSH_CONCURRENCY = 50;
/** How long a send waits for its provider's rate limit before handing the message back to the queue. */
const MAX_RATE_WAIT_MS = 2000;

export interface WorkspaceInfo {
  name: string;
  slug: string;
  settings?: {
    defaultLocale?: string;
    tracking?: { opens?: boolean; clicks?: boolean } | null;
    sender?: { fromName?: string | null; fromEmail?: string | null; replyTo?: string | null } | null;
  };
}

/** What the sends of one workspace's batch share: its settings, contacts and templates, and the sends to record. */
interface Batch {
  ws: WorkspaceId;
  workspace: WorkspaceInfo;
  contactById: Map<string, Record<string, unknown> & { id: string }>;
  templateById: Map<string, ResolvedTemplate>;
  /** Each contact's content of the dynamic content slots the batch's templates name. */
  dynamicByContact: Record<string, Record<string, string>>;
  /** Clients by channel and named provider: asked for once per batch. */
  clients: Map<string, Promise<ProviderClient>>;
  /** Each provider's outcome in this batch, reported for failover. */
  health: Map<string, { accepted: number; transientFailures: number }>;
  sent: SentRecord[];
  /** A send made at once (`sendNow`): a failure is final, never retried later by the queue. */
  final: boolean;
  /** Email headers of sends made at once (a reply's In-Reply-To and References), by message id. */
  headers: Map<string, Record<string, string>>;
}

/** How a batch is sent: the queue's (retries, the message's own headers) or a send made at once. */
interface BatchOptions {
  final?: boolean;
  headers?: Map<string, Record<string, string>>;
}

/** A message rendered for its contact, ready for its provider. */
interface Draft {
  row: ClaimedMessage;
  content: Content;
  /** Email headers (RFC 8058 one-click unsubscribe). */
  headers: Record<string, string>;
  from: Outgoing["from"];
  replyTo: string | null;
  locale: string | null;
  variant: string | null;
}

/** An email's sender and reply address: the template's, else the workspace's `settings.sender`. */
export function senderOf(
  content: Content,
  workspace: WorkspaceInfo,
): { from: Outgoing["from"]; replyTo: string | null } {
  const defaults = workspace.settings?.sender ?? {};
  const text = (value: unknown) => (typeof value === "string" && value.trim() ? value.trim() : null);
  const email = text(content.fromEmail) ?? text(defaults.fromEmail);
  return {
    from: email ? { email, name: text(content.fromName) ?? text(defaults.fromName) } : null,
    replyTo: text(content.replyTo) ?? text(defaults.replyTo),
  };
}

/** What a client sends for a draft. */
const outgoing = (draft: Draft): Outgoing => ({
  messageId: draft.row.id,
  channel: draft.row.channel,
  to: draft.row.to_address,
  content: draft.content,
  from: draft.from,
  replyTo: draft.replyTo,
  headers: draft.headers,
});

/** A send the provider accepted: counted for its health, and joined to the batch's records. */
function accepted(batch: Batch, draft: Draft, client: ProviderClient, answer: Accepted): void {
  tally(batch, client, "accepted");
  batch.sent.push({
    row: draft.row,
    providerType: client.type,
    providerId: client.id,
    providerMessageId: answer.providerMessageId,
    segments: answer.segments ?? null,
    content: draft.content,
    locale: draft.locale,
    variant: draft.variant,
  });
}

/** Count a send's outcome at its provider (`log` has no health to keep). */
function tally(batch: Batch, client: { id: string | null }, outcome: "accepted" | "transientFailures"): void {
  if (!client.id) return;
  const counts = batch.health.get(client.id) ?? { accepted: 0, transientFailures: 0 };
  counts[outcome] += 1;
  batch.health.set(client.id, counts);
}

/** Short links belong to a template and campaign (their clicks are counted per both). */
const linkGroup = (row: ClaimedMessage) => `${row.template_id}\n${row.campaign_id}`;

/** A push `url` that can go through a click redirect (an http(s) link). */
const pushLink = (url: unknown): url is string => typeof url === "string" && /^https?:\/\//i.test(url);

export interface PassResult {
  sent: number;
  failed: number;
  retried: number;
  /** Refused by the provider because the recipient opted out with it. */
  suppressed: number;
}

/** A workspace's share of a claim, and the reads its sends share (started at the claim). */
interface ClaimedGroup {
  rows: ClaimedMessage[];
  batch: Promise<Batch>;
}

export class Sender {
  readonly providers: ProviderDirectory;
  /** Set by `stop()`: sends not started yet go back to the queue. */
  private stopping = false;
  /**
   * The next claim, taken and read while a full one is sent, so the thread
   * goes from recording one batch to rendering the next without waiting on
   * the database. Its rows are leased as any claim's; `stop()` hands them back.
   */
  private ahead?: Promise<ClaimedGroup[]>;

  constructor(
    private readonly broker: ServiceBroker,
    private readonly logger: LoggerInstance,
  ) {
    this.providers = new ProviderDirectory(logger);
  }

  /**
   * Graceful shutdown: the sends under way finish and are recorded, the
   * claimed ones not started yet go back to the queue at once (for another
   * replica, not after their lease), so a stopping worker is done within one
   * provider timeout, not a whole batch's.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    const ahead = this.ahead;
    this.ahead = undefined;
    if (!ahead) return;
    const groups = await ahead.catch(() => []);
    await this.handBack(groups.flatMap((group) => group.rows)).catch((err: unknown) =>
      this.logger.warn("Sends claimed ahead could not be handed back; they wait for their lease", err),
    );
  }

  /** Claimed sends handed back untouched; answers how many. */
  private async handBack(rows: ClaimedMessage[]): Promise<number> {
    await repo.releaseAll(rows);
    return rows.length;
  }

  /** One pass: claim up to `limit` due sends (or take the claim made ahead) and send them. */
  async pass(limit = config().messageBatch): Promise<PassResult> {
    const result: PassResult = { sent: 0, failed: 0, retried: 0, suppressed: 0 };
    if (this.stopping) return result;
    const ahead = this.ahead;
    this.ahead = undefined;
    const groups = await (ahead ?? this.claim(limit));
    // A full claim may have left more: the next is claimed and read while this one is sent.
    if (!this.stopping && !this.ahead && groups.reduce((n, group) => n + group.rows.length, 0) >= limit) {
      this.ahead = this.claim(limit);
      // Seen by the pass that takes it, or by `stop()`.
      this.ahead.catch(() => undefined);
    }
    for (const group of groups)
      if (this.stopping) result.retried += await this.handBack(group.rows);
      else await this.sendBatch(group.rows, await group.batch, result);
    return result;
  }

  /** Claim up to `limit` due sends, by workspace, each workspace's shared reads started. */
  private async claim(limit: number): Promise<ClaimedGroup[]> {
    const rows = await repo.claimDue(limit, config().messageLeaseMs);
    const byWorkspace = new Map<WorkspaceId, ClaimedMessage[]>();
    for (const row of rows) {
      const group = byWorkspace.get(row.workspace_id);
      if (group) group.push(row);
      else byWorkspace.set(row.workspace_id, [row]);
    }
    return [...byWorkspace].map(([ws, group]) => {
      const batch = this.read(ws, group);
      // Awaited when the group is sent; a stopping worker hands the group back unsent.
      batch.catch(() => undefined);
      return { rows: group, batch };
    });
  }

  /**
   * Send messages of one workspace inserted already claimed now, as one
   * batch, and wait for their outcomes (sent, or failed without retries:
   * the caller shows the failure and may send again). Answers the rows that
   * were sent, by id; `headers` are emails' own, by message id.
   */
  async sendNow(
    ws: WorkspaceId,
    rows: ClaimedMessage[],
    headers = new Map<string, Record<string, string>>(),
  ): Promise<Map<string, MessageRow>> {
    if (!rows.length) return new Map();
    const batch = await this.read(ws, rows, { final: true, headers });
    const sent = await this.sendBatch(rows, batch, { sent: 0, failed: 0, retried: 0, suppressed: 0 });
    return new Map(sent.map((row) => [row.id, row]));
  }

  private call<T>(ws: WorkspaceId, action: string, params: object): Promise<T> {
    return systemCall<T>(this.broker, ws, action, params);
  }

  /** What a workspace's claimed sends share, one query each: its settings, their contacts and templates. */
  private async read(ws: WorkspaceId, rows: ClaimedMessage[], options: BatchOptions = {}): Promise<Batch> {
    const contactIds = [...new Set(rows.map((r) => r.contact_id).filter((id): id is string => !!id))];
    const templateIds = [...new Set(rows.map((r) => r.template_id).filter((id): id is string => !!id))];
    const [workspace, contacts, templates] = await Promise.all([
      this.call<WorkspaceInfo>(ws, "workspaces.get", { workspaceId: ws }),
      this.call<Array<Record<string, unknown> & { id: string }>>(ws, "contacts.forSend", { contactIds }),
      Promise.all(
        templateIds.map((templateId) =>
          // Only a template gone fails its sends; templates out of reach fail the read, and the claim's lease retries it.
          this.call<ResolvedTemplate>(ws, "templates.resolve", { templateId }).catch(nullIfNotFound),
        ),
      ),
    ]);
    const resolved = templates.filter((t): t is ResolvedTemplate => !!t);
    return {
      ws,
      workspace,
      contactById: new Map(contacts.map((c) => [c.id, c])),
      templateById: new Map(resolved.map((t) => [t.template.id, t] as const)),
      dynamicByContact: await this.dynamicContent(ws, contactIds, resolved),
      clients: new Map(),
      health: new Map(),
      sent: [],
      final: options.final ?? false,
      headers: options.headers ?? new Map(),
    };
  }

  /**
   * A workspace's claimed sends in phases, so that what they share costs one
   * query each: rendering, the short links of all their emails, the sends
   * (CONCURRENCY at once), and one record of the accepted. A send made at
   * once (`final`) answers the recorded rows; the queue's, none.
   */
  private async sendBatch(rows: ClaimedMessage[], batch: Batch, result: PassResult): Promise<MessageRow[]> {
    const { ws, workspace } = batch;
    const drafts: Draft[] = [];
    for (const row of rows) {
      const draft = await this.render(row, batch).catch((err: unknown) => this.failed(row, err, batch.final));
      if (typeof draft === "string") result[draft] += 1;
      else drafts.push(draft);
    }
    await this.track(drafts, workspace).catch(async (err: unknown) => {
      // Without their short links no email of the batch can go: all wait for a retry.
      for (const draft of drafts.splice(0)) result[await this.failed(draft.row, err, batch.final)] += 1;
    });
    const pushes = drafts.filter((d) => d.row.channel === "push");
    if (pushes.length) await this.sendPushes(ws, pushes, batch, result);
    const others = pushes.length ? drafts.filter((d) => d.row.channel !== "push") : drafts;
    const singles = await this.sendBatched(others, batch, result);
    let next = 0;
    const worker = async () => {
      while (next < singles.length && !(this.stopping && !batch.final)) {
        const outcome = await this.sendOne(singles[next++], batch);
        if (outcome !== "sent") result[outcome] += 1;
      }
    };
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, singles.length) }, worker));
    result.retried += await this.handBack(singles.slice(next).map((draft) => draft.row));
    const recorded = batch.final ? await repo.markSentRows(batch.sent) : [];
    result.sent += batch.final ? recorded.length : await repo.markSent(batch.sent);
    for (const { row } of batch.sent) countMessages(this.broker.metrics, row.channel, "sent");
    // Callbacks that outran this batch's record apply now.
    await applyPending(
      this.broker,
      batch.sent.flatMap((s) =>
        s.providerMessageId === null
          ? []
          : [{ id: s.row.id, providerId: s.providerId, providerMessageId: s.providerMessageId }],
      ),
    ).catch((err: unknown) => this.logger.warn("Kept provider callbacks could not be applied", err));
    for (const [providerId, outcome] of batch.health)
      await this.call<{ status: "active" | "failing" }>(ws, "providers.reportHealth", {
        providerId,
        ...outcome,
      }).then(
        ({ status }) => this.providers.healthReported(ws, providerId, status),
        (err: unknown) => this.logger.warn(`Provider ${providerId}'s health could not be recorded`, err),
      );
    return recorded;
  }

  /** The batch's contacts' content of the dynamic content slots its templates name (none without the content service). */
  private async dynamicContent(
    ws: WorkspaceId,
    contactIds: string[],
    templates: ResolvedTemplate[],
  ): Promise<Record<string, Record<string, string>>> {
    const slots = dynamicSlotsOf(templates.map(renderableOf));
    if (!slots.length || !contactIds.length || !optionalStepRuns(this.broker, "content.dynamicFor"))
      return {};
    const byContact: Record<string, Record<string, string>> = {};
    for (let i = 0; i < contactIds.length; i += 1000)
      Object.assign(
        byContact,
        await this.call(ws, "content.dynamicFor", { contactIds: contactIds.slice(i, i + 1000), slots }),
      );
    return byContact;
  }

  /** The message rendered for its contact; a template that no longer exists fails it. */
  private async render(row: ClaimedMessage, batch: Batch): Promise<Draft | keyof PassResult> {
    const template = this.renderableOf(row, batch.templateById);
    if (!template) {
      await repo.markFailed(row, "The template no longer exists");
      countMessages(this.broker.metrics, row.channel, "failed");
      return "failed";
    }
    const contact = row.contact_id ? (batch.contactById.get(row.contact_id) ?? null) : null;
    const links = this.links(row);
    const composed = await compose(template, {
      locale: row.template_id ? undefined : (row.locale ?? undefined),
      contact: contact ?? { id: null, email: row.channel === "email" ? row.to_address : null },
      defaultLocale: batch.workspace.settings?.defaultLocale ?? "en",
      workspace: { name: batch.workspace.name, slug: batch.workspace.slug },
      variables: row.variables,
      dynamic: row.contact_id ? batch.dynamicByContact[row.contact_id] : undefined,
      ...links,
    });
    return {
      row,
      content: composed.content,
      headers: {
        ...this.headers(row, links.unsubscribeUrl),
        ...(row.channel === "email" ? batch.headers.get(row.id) : {}),
      },
      ...(row.channel === "email"
        ? senderOf(composed.content, batch.workspace)
        : { from: null, replyTo: null }),
      locale: composed.locale,
      variant: composed.variant,
    };
  }

  /**
   * Emails of one template, locale, variant and sender whose provider takes
   * batches go as one request per group (up to its limit), each recipient
   * keeping its own row and status; answers the drafts to send one by one.
   */
  private async sendBatched(drafts: Draft[], batch: Batch, result: PassResult): Promise<Draft[]> {
    const singles: Draft[] = [];
    const groups = new Map<string, { client: ProviderClient; drafts: Draft[] }>();
    for (const draft of drafts) {
      const { row, from } = draft;
      const client =
        row.channel === "email" && row.template_id && from
          ? await this.clientOf(row, batch).catch(() => null)
          : null;
      // A batch shares one body; a mail with files goes on its own.
      if (!client?.sendBatch || !from || attachmentsOf(draft.content).length) {
        singles.push(draft);
        continue;
      }
      const key = [
        client.id,
        row.template_id,
        draft.locale,
        draft.variant,
        from.email,
        from.name,
        draft.replyTo,
      ];
      const group = groups.get(key.join("\n")) ?? { client, drafts: [] };
      group.drafts.push(draft);
      groups.set(key.join("\n"), group);
    }
    for (const { client, drafts: members } of groups.values()) {
      const fitted = members.length > 1 ? this.fit(members, batch, client) : null;
      if (!fitted) {
        singles.push(...members);
        continue;
      }
      singles.push(...fitted.misfits);
      const limit = client.batchLimits?.recipients ?? 1000;
      for (let i = 0; i < fitted.recipients.length; i += limit)
        await this.sendChunk(
          client,
          { ...fitted, recipients: fitted.recipients.slice(i, i + limit) },
          batch,
          result,
        );
    }
    return singles;
  }

  /** A group's shared body, cut from its template's source, and each recipient's holes (misfits go one by one). */
  private fit(members: Draft[], batch: Batch, client: ProviderClient) {
    const [first] = members;
    const template = this.renderableOf(first.row, batch.templateById);
    if (!template) return null;
    const source = emailSource(
      template,
      first.locale ?? template.locale,
      first.variant,
      batch.workspace.settings?.defaultLocale ?? "en",
    );
    const html = typeof source.html === "string" ? skeletonOf(source.html, true) : null;
    if (!html || html.some((part) => part.includes(BATCH_KEY))) return null;
    // The text part is each recipient's own, whole: derived from its rendered HTML or rendered from the
    // template's, its links signed for its message.
    const text = ["", ""];
    const recipients: Array<{ draft: Draft; html: string[]; text: string[] | null }> = [];
    const misfits: Draft[] = [];
    const maxBytes = client.batchLimits?.holeBytes ?? Infinity;
    for (const draft of members) {
      const holes = holesOf(String(draft.content.html ?? ""), html);
      const textHoles = [String(draft.content.text ?? "")];
      const all = [...(holes ?? []), ...textHoles];
      const fits =
        holes && !all.some((hole) => hole.includes(BATCH_KEY)) && Buffer.byteLength(all.join("")) <= maxBytes;
      if (fits) recipients.push({ draft, html: holes, text: textHoles });
      else misfits.push(draft);
    }
    return { from: first.from!, replyTo: first.replyTo, html, text, recipients, misfits };
  }

  /** One batched request; its outcome is each recipient's. */
  private async sendChunk(
    client: ProviderClient,
    chunk: NonNullable<ReturnType<Sender["fit"]>>,
    batch: Batch,
    result: PassResult,
  ): Promise<void> {
    if (this.stopping && !batch.final) {
      result.retried += await this.handBack(chunk.recipients.map(({ draft }) => draft.row));
      return;
    }
    const wait = await providerTurn(client.type, MAX_RATE_WAIT_MS);
    if (wait > 0) {
      for (const { draft } of chunk.recipients) await repo.release(draft.row, new Date(Date.now() + wait));
      result.retried += chunk.recipients.length;
      return;
    }
    try {
      const answers = await this.timed(client, () =>
        client.sendBatch!({
          from: chunk.from,
          replyTo: chunk.replyTo,
          html: chunk.html,
          text: chunk.text,
          recipients: chunk.recipients.map(({ draft, html, text }) => ({
            message: outgoing(draft),
            html,
            text,
          })),
        }),
      );
      chunk.recipients.forEach(({ draft }, i) => accepted(batch, draft, client, answers[i]));
    } catch (err) {
      for (const { draft } of chunk.recipients) {
        if (err instanceof ProviderError && err.transient) tally(batch, client, "transientFailures");
        result[await this.failed(draft.row, err, batch.final)] += 1;
      }
    }
  }

  /** Send one draft; a send the provider accepted joins the batch's records. */
  private async sendOne(draft: Draft, batch: Batch): Promise<keyof PassResult> {
    const { row } = draft;
    let client: ProviderClient | undefined;
    try {
      client = await this.clientOf(row, batch);
      const wait = await providerTurn(client.type, MAX_RATE_WAIT_MS);
      if (wait > 0) {
        await repo.release(row, new Date(Date.now() + wait));
        return "retried";
      }
      const sending = client;
      accepted(batch, draft, client, await this.timed(client, () => sending.send(outgoing(draft))));
      return "sent";
    } catch (err) {
      if (client && err instanceof ProviderError && err.transient) tally(batch, client, "transientFailures");
      return this.failed(row, err, batch.final);
    }
  }

  /**
   * Push messages: each to every active subscription of its contact (read,
   * keys opened, here), each subscription through its type's provider
   * (push.ts). The outcomes are kept per subscription in one insert; the
   * ones a push service says are gone are deactivated by the push area.
   */
  private async sendPushes(
    ws: WorkspaceId,
    drafts: Draft[],
    batch: Batch,
    result: PassResult,
  ): Promise<void> {
    const contactIds = [...new Set(drafts.flatMap((d) => (d.row.contact_id ? [d.row.contact_id] : [])))];
    let targets: SendTarget[];
    let clients: Map<PushSubscriptionType, PushClient>;
    try {
      [targets, clients] = await Promise.all([
        subscriptionsForSend(ws, contactIds),
        this.providers.pushClientsFor(ws),
      ]);
    } catch (err) {
      const cause = new ProviderError(
        `Push subscriptions could not be read: ${(err as Error).message}`,
        true,
      );
      for (const draft of drafts) result[await this.failed(draft.row, cause)] += 1;
      return;
    }
    const byContact = new Map<string, SendTarget[]>();
    for (const target of targets)
      if (target.contactId)
        byContact.set(target.contactId, [...(byContact.get(target.contactId) ?? []), target]);
    const deliveries: NewPushDelivery[] = [];
    const gone: string[] = [];
    let next = 0;
    const worker = async () => {
      while (next < drafts.length) {
        const draft = drafts[next++];
        const mine = byContact.get(draft.row.contact_id ?? "") ?? [];
        const outcome = await this.sendPush(draft, mine, clients, batch, deliveries, gone);
        if (outcome !== "sent") result[outcome] += 1;
      }
    };
    await Promise.all(Array.from({ length: Math.min(PUSH_CONCURRENCY, drafts.length) }, worker));
    await insertPushDeliveries(deliveries).catch((err: unknown) =>
      this.logger.warn("Push deliveries could not be recorded", err),
    );
    if (gone.length)
      await this.call(ws, "push.deactivate", { subscriptionIds: gone }).catch((err: unknown) =>
        this.logger.warn(`${gone.length} gone push subscriptions could not be deactivated`, err),
      );
  }

  /** One push message to its contact's subscriptions: sent when one accepted, else retried or failed (push.ts). */
  private async sendPush(
    draft: Draft,
    targets: SendTarget[],
    clients: Map<PushSubscriptionType, PushClient>,
    batch: Batch,
    deliveries: NewPushDelivery[],
    gone: string[],
  ): Promise<keyof PassResult> {
    const { row } = draft;
    if (!targets.length) {
      await repo.markSuppressed(row, "invalid_address", "The contact has no active push subscription");
      countMessages(this.broker.metrics, row.channel, "suppressed");
      return "suppressed";
    }
    // Each subscription's send counts against its provider type's rate limit (PROVIDER_RATE_LIMITS), as a message does on other channels.
    for (const target of targets) {
      const client = clients.get(target.type);
      const wait = client ? await providerTurn(client.type, MAX_RATE_WAIT_MS) : 0;
      if (wait > 0) {
        await repo.release(row, new Date(Date.now() + wait));
        return "retried";
      }
    }
    const attempts = await pushToAll(
      targets,
      clients,
      notificationOf(row.id, draft.content),
      this.broker.metrics,
    );
    for (const { target, client, outcome } of attempts) {
      deliveries.push({
        workspaceId: row.workspace_id,
        messageId: row.id,
        subscriptionId: target.subscriptionId,
        subscriptionType: target.type,
        attempt: row.attempts,
        providerType: client?.type ?? null,
        providerId: client?.id ?? null,
        status: outcome.status,
        code: outcome.status === "accepted" ? null : outcome.code,
        providerMessageId: outcome.status === "accepted" ? outcome.providerMessageId : null,
      });
      if (outcome.status === "gone") gone.push(target.subscriptionId);
      if (client && outcome.status === "accepted") tally(batch, client, "accepted");
      if (client && outcome.status === "failed" && outcome.transient)
        tally(batch, client, "transientFailures");
    }
    const verdict = verdictOf(attempts);
    if (verdict.kind !== "sent")
      return this.failed(row, new ProviderError(verdict.error, verdict.kind === "retry"));
    batch.sent.push({
      row,
      providerType: verdict.client.type,
      providerId: verdict.client.id,
      providerMessageId: verdict.providerMessageId,
      segments: null,
      content: draft.content,
      locale: draft.locale,
      variant: draft.variant,
    });
    return "sent";
  }

  /** The message's provider, else its channel's default, else `log`; asked for once per batch. */
  private clientOf(row: ClaimedMessage, batch: Batch): Promise<ProviderClient> {
    const key = `${row.channel}\n${row.provider_id ?? ""}`;
    let client = batch.clients.get(key);
    if (!client) {
      client = this.providers.clientFor(row.workspace_id, row.channel, row.provider_id);
      // Each send that waits on it sees the failure; the batch must not see it unhandled.
      client.catch(() => undefined);
      batch.clients.set(key, client);
    }
    return client;
  }

  private renderableOf(row: ClaimedMessage, templateById: Map<string, ResolvedTemplate>): Renderable | null {
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
  private links(row: ClaimedMessage): { unsubscribeUrl?: string; preferencesUrl?: string } {
    if (!row.contact_id) return {};
    const base = { ws: row.workspace_id, sub: row.contact_id };
    return {
      unsubscribeUrl: unsubscribeUrl(
        signLinkToken({ typ: "unsubscribe", ...base, ch: row.channel, mid: row.id }),
      ),
      // The message id proves a choice made from this message (an SMS opt-in from an email, say).
      preferencesUrl: preferencesUrl(signLinkToken({ typ: "preferences", ...base, mid: row.id })),
    };
  }

  /** RFC 8058 one-click unsubscribe on every non-transactional email to a contact. */
  private headers(row: ClaimedMessage, url: string | undefined): Record<string, string> {
    if (row.channel !== "email" || row.transactional || !url) return {};
    return { "List-Unsubscribe": `<${url}>`, "List-Unsubscribe-Post": "List-Unsubscribe=One-Click" };
  }

  /**
   * Email HTML with its links through short links and an open pixel, as
   * `settings.tracking` allows (both on by default); the text part's links go
   * through the same short links, signed alike. The links of all the
   * drafts of one template and campaign are coded in one query.
   */
  private async track(drafts: Draft[], workspace: WorkspaceInfo): Promise<void> {
    const tracking = workspace.settings?.tracking ?? {};
    const emails = drafts.filter((d) => d.row.channel === "email" && typeof d.content.html === "string");
    const pushes = drafts.filter((d) => d.row.channel === "push" && pushLink(d.content.url));
    if (tracking.clicks !== false) {
      const { publicUrl } = config();
      const groups = new Map<string, { row: ClaimedMessage; urls: Set<string> }>();
      for (const draft of pushes) {
        const key = linkGroup(draft.row);
        const group = groups.get(key) ?? { row: draft.row, urls: new Set<string>() };
        group.urls.add(draft.content.url as string);
        groups.set(key, group);
      }
      for (const draft of emails) {
        const key = linkGroup(draft.row);
        const group = groups.get(key) ?? { row: draft.row, urls: new Set<string>() };
        for (const url of trackableLinks(draft.content.html as string, publicUrl)) group.urls.add(url);
        if (typeof draft.content.text === "string")
          for (const url of trackableTextLinks(draft.content.text, publicUrl)) group.urls.add(url);
        groups.set(key, group);
      }
      const codes = new Map<string, Map<string, string>>();
      for (const [key, { row, urls }] of groups)
        codes.set(
          key,
          await repo.shortLinkCodes(row.workspace_id, row.template_id, row.campaign_id, [...urls]),
        );
      for (const draft of emails) {
        const linkCodes = codes.get(linkGroup(draft.row))!;
        const html = rewriteLinks(draft.content.html as string, draft.row.id, linkCodes);
        const text =
          typeof draft.content.text === "string"
            ? rewriteTextLinks(draft.content.text, draft.row.id, linkCodes)
            : draft.content.text;
        draft.content = { ...draft.content, html, text };
      }
      // A push's `url` opens through its click redirect: the click is counted, then the page opens.
      for (const draft of pushes) {
        const code = codes.get(linkGroup(draft.row))!.get(draft.content.url as string);
        if (code) draft.content = { ...draft.content, url: trackingUrl(draft.row.id, code) };
      }
    }
    if (tracking.opens !== false)
      for (const draft of emails)
        draft.content = { ...draft.content, html: addOpenPixel(draft.content.html as string, draft.row.id) };
  }

  /** A provider's send request, timed and its errors counted by provider type (lib/business-metrics.ts). */
  private timed<T>(client: ProviderClient, send: () => Promise<T>): Promise<T> {
    return timeProviderSend(
      this.broker.metrics,
      client.type,
      (err) => err instanceof ProviderError && err.transient,
      send,
    );
  }

  private async failed(row: ClaimedMessage, err: unknown, final = false): Promise<keyof PassResult> {
    const message = err instanceof Error ? err.message : String(err);
    if (err instanceof ProviderError && err.suppression) {
      await repo.markSuppressed(row, err.suppression, message);
      countMessages(this.broker.metrics, row.channel, "suppressed");
      return "suppressed";
    }
    const permanent = err instanceof TemplateFault || (err instanceof ProviderError && !err.transient);
    const delays = config().messageRetryDelaysMs;
    if (permanent || final || row.attempts > delays.length) {
      await repo.markFailed(row, message);
      countMessages(this.broker.metrics, row.channel, "failed");
      return "failed";
    }
    this.logger.warn(`Send of message ${row.id} failed (attempt ${row.attempts}), retrying: ${message}`);
    const asked = err instanceof ProviderError ? (err.retryAfterMs ?? 0) : 0;
    await repo.retryAt(row, new Date(Date.now() + Math.max(delays[row.attempts - 1], asked)), message);
    return "retried";
  }
}
