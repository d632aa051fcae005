import type { ServiceSchema } from "moleculer";
import { notFound } from "../../lib/errors";
import type { AppContext } from "../../lib/moleculer-types";
import { workspaceOf } from "../../lib/tenancy";
import { probeVersions } from "../../lib/versioned-cache";
import { DbMixin } from "../../mixins/db.mixin";
import { OutboxRelayMixin } from "../../mixins/outbox-relay";
import { ActivityEvent } from "../../models";
import { runChain } from "./chain";
import * as repo from "./events.repo";
import { clampEventsLimit, schemas, type EventRecord, type RecordInput } from "./events.schemas";

/** Validated params arrive typed by the schema above; handlers read them through this alias. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Ctx = AppContext<Record<string, any>>;

/** Recorded activity events and the ordered chain every origin goes through. */
const EventsService: ServiceSchema = {
  name: "events",
  mixins: [DbMixin(ActivityEvent), OutboxRelayMixin],
  settings: { rest: "/" },

  actions: {
    /** Record an event; answers after the chain (segments, campaigns, score). Session only. */
    create: {
      rest: "POST /workspaces/:workspaceId/events",
      auth: "session",
      permission: "contacts.write",
      params: schemas.create,
      openapi: { tags: ["Events"], summary: "Record an activity event (answers after the 6.3 chain)" },
      async handler(ctx: Ctx) {
        const { type, contactId, metadata, sessionId, pageUrl, referrer, utmSource, utmMedium, utmCampaign } =
          ctx.params;
        const input: RecordInput = {
          type,
          contactId,
          metadata,
          sessionId,
          pageUrl,
          referrer,
          utmSource,
          utmMedium,
          utmCampaign,
        };
        const event = await this.record(ctx, input);
        ctx.meta.$statusCode = 201;
        return event;
      },
    },

    /** Newest events first, filtered by contact and type; limit default 50, max 200. Session only. */
    list: {
      rest: "GET /workspaces/:workspaceId/events",
      auth: "session",
      permission: "contacts.read",
      params: schemas.list,
      openapi: { tags: ["Events"], summary: "List events with their contact" },
      handler(ctx: Ctx) {
        const { contactId, type, limit } = ctx.params;
        return repo.listEvents(workspaceOf(ctx), { contactId, type }, clampEventsLimit(limit));
      },
    },

    /** Internal: the one entry for every recorded event (API, inbound webhooks, forms, tracking, channel inbound). */
    record: {
      params: schemas.record,
      handler(ctx: Ctx) {
        return this.record(ctx, ctx.params as RecordInput);
      },
    },

    /** Internal: a contact's newest events (timeline, GDPR export). */
    listForContact: {
      params: schemas.listForContact,
      handler(ctx: Ctx) {
        return repo.listEvents(
          workspaceOf(ctx),
          { contactId: ctx.params.contactId },
          clampEventsLimit(ctx.params.limit),
        );
      },
    },
  },

  methods: {
    /** Store (with its fact for outbound webhooks, staged by the same statement), then run the chain in order. */
    async record(ctx: Ctx, input: RecordInput): Promise<EventRecord> {
      const workspaceId = workspaceOf(ctx);
      // The chain's definitions are probed beside the insert, not one step after another; its
      // segment and score steps read them only for an event with a contact.
      const [event, configVersions] = await Promise.all([
        repo.insertEvent(workspaceId, input),
        input.contactId ? probeVersions(workspaceId) : undefined,
      ]);
      if (!event) throw notFound("Contact");
      await runChain(this.broker, ctx, workspaceId, event, configVersions);
      return event;
    },
  },
};

export default EventsService;
