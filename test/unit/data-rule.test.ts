import fs from "node:fs";
import path from "node:path";
import { ROOT, sourceFiles } from "../helpers/source-files";

/**
 * The data rule (style.md, Data): an area's tables are named in SQL only by
 * that area's `*.repo.ts` files; another area reads them through the owner's
 * actions. Ownership follows the migrations: the area whose repos write the
 * table. `lib` owns the shared machinery's tables.
 */
const OWNERS: Record<string, string[]> = {
  auth: ["users", "password_reset_tokens", "revoked_sessions", "api_keys"],
  workspaces: ["workspaces", "members", "audit_logs"],
  contacts: [
    "contacts",
    "contact_notes",
    "contact_stage_history",
    "contact_link_tokens",
    "custom_fields",
    "custom_field_groups",
    "dnc_entries",
    "lifecycle_stages",
  ],
  campaigns: [
    "campaigns",
    "campaign_versions",
    "campaign_enrollments",
    "campaign_logs",
    "campaign_triggers",
    "campaign_ab_winners",
    "campaign_cursors",
    "broadcast_recipients",
  ],
  content: ["assets", "asset_categories", "dynamic_content", "focus_items", "landing_pages"],
  crm: [
    "companies",
    "deals",
    "deal_stage_history",
    "pipelines",
    "tasks",
    "notifications",
    "saved_views",
    "dashboard_widgets",
  ],
  events: ["events", "event_chain_retries"],
  forms: ["forms", "form_views", "form_submissions"],
  inbox: [
    "inbox_threads",
    "inbox_messages",
    "inbox_assignment_rules",
    "inbox_auto_replies",
    "inbox_auto_reply_log",
    "inbox_canned_responses",
    "inbox_attachment_removals",
  ],
  messages: ["messages", "short_links", "short_link_clicks", "provider_callbacks_pending", "push_deliveries"],
  providers: [
    "providers",
    "channel_commands",
    "provider_event_log",
    "chatapp2_templates",
    "chatapp2_windows",
    "inbound_queue",
  ],
  push: ["push_subscriptions"],
  reports: ["reports", "report_schedules"],
  scoring: ["scoring_rules", "scoring_rule_matches", "score_history"],
  segments: ["segments", "segment_members", "segment_membership_log"],
  templates: ["templates", "template_translations"],
  webhooks: ["webhook_endpoints", "webhook_deliveries", "webhook_delivery_queue", "webhook_inbound_replays"],
  lib: ["domain_event_outbox", "jobs", "idempotency_keys"],
  retention: ["retention_runs"],
  analytics: [
    "analytics_rollups",
    "analytics_rollup_deltas",
    "analytics_events_pending",
    "analytics_node_entries",
    "analytics_contact_firsts",
    "analytics_contact_sources",
    "analytics_contact_created",
    "analytics_contact_activity",
    "analytics_contact_touches",
    "analytics_contact_opt_outs",
    "analytics_contact_conversions",
  ],
};

const MERGE_MOVES = "a merge moves the duplicates' rows to the primary in the merge's one transaction";
const GDPR = "a GDPR export reads, and an erasure deletes, everything held about the contact, in one place";
const SEGMENT_ANSWERS =
  "rollups are not kept per segment: a segment's answers sum its current members' raw rows by their per-contact indexes, in one statement";
const REBUILD =
  "the rollups' rebuild reads the raw rows their triggers read, set-based in one pass (a bulk load, a repair)";
const SEARCH = "the workspace search reads each kind's trigram-indexed name in one place, kind by kind";
/**
 * Deliberate uses of another area's tables, `file table` → why. Each is a
 * set-based statement that an action per row or per batch would turn into a
 * loop or split from its transaction.
 */
const CROSS_AREA: Record<string, string> = {
  "services/analytics/rollups.repo.ts workspaces":
    "the fold drops the deltas of a deleted workspace (the deltas keep no foreign key, off the facts' hot path)",
  "services/analytics/realtime.repo.ts events":
    "realtime answers the last 30 minutes from the raw events (the rollups answer every other range)",
  "services/analytics/rebuild.repo.ts events": REBUILD,
  "services/analytics/rebuild.repo.ts messages": REBUILD,
  "services/analytics/rebuild.repo.ts contacts": REBUILD,
  "services/analytics/rebuild.repo.ts form_submissions": REBUILD,
  "services/analytics/rebuild.repo.ts campaign_enrollments": REBUILD,
  "services/analytics/rebuild.repo.ts campaign_logs": REBUILD,
  "services/analytics/segment.repo.ts segment_members": SEGMENT_ANSWERS,
  "services/analytics/segment.repo.ts segments": SEGMENT_ANSWERS,
  "services/analytics/segment.repo.ts events": SEGMENT_ANSWERS,
  "services/analytics/segment.repo.ts messages": SEGMENT_ANSWERS,
  "services/analytics/segment.repo.ts form_submissions": SEGMENT_ANSWERS,
  "services/analytics/segment.repo.ts campaign_enrollments": SEGMENT_ANSWERS,
  "services/analytics/segment.repo.ts campaign_logs": SEGMENT_ANSWERS,
  "services/campaigns/ab.repo.ts messages":
    "A/B winners count each variant's sends, opens and clicks in one aggregate",
  "services/campaigns/broadcasts.repo.ts contacts":
    "a broadcast's audience (ids or a filter) is selected set-based into its recipients",
  "services/campaigns/broadcasts.repo.ts segment_members":
    "a broadcast's audience is a segment's members, set-based",
  "services/campaigns/broadcasts.repo.ts segments":
    "a broadcast's audience is a segment's members, set-based",
  "services/campaigns/broadcasts.repo.ts messages": "a broadcast's progress counts the messages it queued",
  "services/campaigns/broadcasts.repo.ts jobs": "a stalled broadcast is found by its job's state (lib/jobs)",
  "services/campaigns/segment-log.repo.ts segment_membership_log":
    "segment triggers enrol by the membership log, read in order by a cursor",
  "services/campaigns/enroll.repo.ts contacts":
    "enrolment inserts only contacts that exist, set-based, in its statement",
  "services/campaigns/enroll.repo.ts workspaces":
    "send windows read each contact's time zone, else the workspace's",
  "services/campaigns/enrollments.repo.ts events": "a clicked-link condition reads the click event",
  "services/campaigns/enroll.repo.ts domain_event_outbox":
    "an enrolment's fact is staged in the enrolment's statement",
  "services/content/focus-items.repo.ts forms": "the public widget's cache version covers the forms it shows",
  "services/content/landing-pages.repo.ts workspaces": "a public page's address carries its workspace's slug",
  "services/push/subscriptions.repo.ts contacts":
    "a subscription binds a contact only when it is the workspace's",
  "services/contacts/merge.repo.ts inbox_threads":
    "a merge moves the duplicates' conversations, closing all but one open per channel, in its transaction",
  "services/contacts/merge.repo.ts segment_members":
    "a merge moves segment memberships in the merge's transaction so no membership is lost",
  "services/contacts/timeline.repo.ts events":
    "the timeline merges events, messages and submissions in one page",
  "services/contacts/timeline.repo.ts messages":
    "the timeline merges events, messages and submissions in one page",
  "services/contacts/timeline.repo.ts form_submissions":
    "the timeline merges events, messages and submissions in one page",
  "services/contacts/related.repo.ts events": MERGE_MOVES,
  "services/contacts/related.repo.ts score_history": MERGE_MOVES,
  "services/contacts/related.repo.ts deals": MERGE_MOVES,
  "services/contacts/related.repo.ts tasks": MERGE_MOVES,
  "services/contacts/related.repo.ts messages": MERGE_MOVES,
  "services/contacts/related.repo.ts short_link_clicks": MERGE_MOVES,
  "services/contacts/related.repo.ts form_submissions": MERGE_MOVES,
  "services/contacts/related.repo.ts push_subscriptions": MERGE_MOVES,
  "services/contacts/gdpr.repo.ts events": GDPR,
  "services/contacts/gdpr.repo.ts messages": GDPR,
  "services/contacts/gdpr.repo.ts short_link_clicks": GDPR,
  "services/contacts/gdpr.repo.ts form_submissions": GDPR,
  "services/contacts/gdpr.repo.ts score_history": GDPR,
  "services/contacts/gdpr.repo.ts deals": GDPR,
  "services/contacts/gdpr.repo.ts tasks": GDPR,
  "services/contacts/gdpr.repo.ts segment_members": GDPR,
  "services/contacts/gdpr.repo.ts segment_membership_log": GDPR,
  "services/contacts/gdpr.repo.ts inbox_threads": GDPR,
  "services/contacts/gdpr.repo.ts inbox_messages": GDPR,
  "services/crm/search.repo.ts contacts": SEARCH,
  "services/crm/search.repo.ts segments": SEARCH,
  "services/crm/search.repo.ts campaigns": SEARCH,
  "services/crm/search.repo.ts templates": SEARCH,
  "services/crm/search.repo.ts forms": SEARCH,
  "services/webhooks/endpoints.repo.ts events":
    "not the table: an endpoint's `events` column, bound as jsonb",
  "services/events/events.repo.ts contacts":
    "an event keeps its contact only when it is the workspace's, in the insert",
  "services/events/events.repo.ts domain_event_outbox": "an event's fact is staged in the insert's statement",
  "services/messages/messages.repo.ts domain_event_outbox":
    "a batch's `message.sent` facts are staged in the statement that records the sends",
  "services/forms/forms.repo.ts workspaces": "a public form is read with its workspace's allowed origins",
  "services/retention/retention.repo.ts workspaces":
    "the daily claim picks the workspaces whose settings keep a kind for some days, set-based, in its claim",
  "services/scoring/scoring.repo.ts contacts":
    "scoring owns the score column: scores move with their history, set-based, in scoring's locked transaction",
  "services/scoring/conditions.repo.ts contacts":
    "scoring owns the score column: scores move with their history, set-based, in scoring's locked transaction",
  "services/scoring/decay.repo.ts contacts":
    "scoring owns the score column: decay claims contacts and moves scores in one transaction",
  "services/scoring/scoring.repo.ts events":
    "a rule saved later is applied to the workspace's past events, set-based",
  "services/segments/matching.repo.ts contacts": "segment filters are compiled to SQL over contacts",
  "services/segments/matching.repo.ts events": "segment filters on events are compiled to SQL over events",
  "services/segments/members.repo.ts contacts":
    "a segment's members page shows its contacts, and static members must be the workspace's contacts",
  "services/segments/membership.repo.ts contacts": "membership is computed set-based over contacts",
  "services/segments/filter-compiler.ts events": "segment filters on events are compiled to SQL over events",
  "services/segments/filter-schema.ts companies":
    "segment filters on a contact's company compile to a subquery",
};

/** Modules outside a repo that name their own area's tables, `file` → why. */
const OWN_SQL_OUTSIDE_REPOS: Record<string, string> = {
  "services/segments/filter-compiler.ts":
    "the filter compiler emits the SQL of segment and event conditions, which the repos run",
};

const TABLE_OWNER = new Map(
  Object.entries(OWNERS).flatMap(([area, tables]) => tables.map((t) => [t, area] as const)),
);
const NAMED = new RegExp(
  `\\b(?:FROM|JOIN|INTO|UPDATE|TABLE)\\s+(${[...TABLE_OWNER.keys()].join("|")})\\b`,
  "g",
);

/** The area a file belongs to: its folder under services/, or `lib`. */
const areaOf = (file: string) => (file.startsWith("lib/") ? "lib" : file.split("/")[1]);

/** A table named in a statement, or in a repo as a quoted name (a table chosen at run time, `FROM ${table}`). */
function tablesNamed(file: string): string[] {
  const text = fs.readFileSync(path.join(ROOT, file), "utf8");
  const inStatements = [...text.matchAll(NAMED)].map((m) => m[1]);
  const quoted = file.endsWith(".repo.ts")
    ? [...text.matchAll(/"([a-z0-9_]+)"/g)].map((m) => m[1]).filter((name) => TABLE_OWNER.has(name))
    : [];
  return [...new Set([...inStatements, ...quoted])];
}

const files = [...sourceFiles("services"), ...sourceFiles("lib")];

test("every table the migrations create (and keep) has an owning area", () => {
  const migrations = sourceFiles("models/migrations").map((f) => fs.readFileSync(path.join(ROOT, f), "utf8"));
  const named = (statement: string) =>
    new Set(
      migrations.flatMap((text) =>
        [...text.matchAll(new RegExp(`${statement} (?:IF (?:NOT )?EXISTS )?"?([a-z][a-z0-9_]*)`, "g"))].map(
          (m) => m[1],
        ),
      ),
    );
  const dropped = named("DROP TABLE");
  const kept = [...named("CREATE TABLE")].filter((table) => !dropped.has(table));
  expect(kept.filter((t) => !TABLE_OWNER.has(t))).toEqual([]);
});

test("no file names another area's table in SQL, except the deliberate reads listed with their reason", () => {
  const crossings = files.flatMap((file) =>
    tablesNamed(file)
      .filter((table) => TABLE_OWNER.get(table) !== areaOf(file))
      .map((table) => `${file} ${table}`),
  );
  expect(crossings.filter((c) => !(c in CROSS_AREA))).toEqual([]);
  // A listed crossing that is gone is taken off the list.
  expect(Object.keys(CROSS_AREA).filter((c) => !crossings.includes(c))).toEqual([]);
});

test("an area's own tables are named only in its *.repo.ts files", () => {
  const outside = files.filter(
    (file) =>
      areaOf(file) !== "lib" &&
      !file.endsWith(".repo.ts") &&
      tablesNamed(file).some((table) => TABLE_OWNER.get(table) === areaOf(file)),
  );
  expect(outside.sort()).toEqual(Object.keys(OWN_SQL_OUTSIDE_REPOS).sort());
});

test("statements run only from *.repo.ts files (a table named at run time included)", () => {
  const runsSql =
    /\.query\s*[(<]|(?<![\w.])query(Prepared|AcrossWorkspaces|AcrossWorkspacesPrepared)?[(<]|QueryTypes|sqlProbe\(/;
  const running = files.filter(
    (file) =>
      file.startsWith("services/") &&
      !file.endsWith(".repo.ts") &&
      runsSql.test(fs.readFileSync(path.join(ROOT, file), "utf8")),
  );
  expect(running).toEqual([]);
});

test("every statement goes through the one query API (lib/database.ts), the workspace first or said to span them", () => {
  // Sequelize's own query runs only inside lib/database.ts and the statistics keeper, which is handed the pool it opens.
  const ownRunner = new Set(["lib/database.ts", "lib/table-stats.ts"]);
  const direct = files.filter(
    (file) =>
      !ownRunner.has(file) &&
      /\.query\s*[(<]|\bselectRows\b/.test(fs.readFileSync(path.join(ROOT, file), "utf8")),
  );
  expect(direct).toEqual([]);
});
