import type { Transaction } from "sequelize";
import { MicroBatcher } from "../../lib/batcher";
import { Binds, database } from "../../lib/database";
import { VersionedCache, type Versions } from "../../lib/versioned-cache";
import { config } from "../../lib/config";
import { compileFilter } from "./filter-compiler";
import type { FilterGroup } from "./filter-schema";
import {
  applyChanges,
  holdRecompute,
  levelMembership,
  loadDynamicSegments,
  lockContacts,
  reconcileSegment,
  segmentsVersionProbe,
  type DynamicSegment,
  type MembershipChange,
} from "./membership.repo";
import { claimTimeRefresh } from "./segments.repo";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * Segment membership: incremental evaluation of a few contacts against the
 * segments a change could affect, and the full recompute that reconciles a
 * whole segment. Entries and exits are logged by the triggers of migration
 * 0020 (with the causing event id, when there is one).
 */

export interface EvaluationResult {
  entered: MembershipChange[];
  exited: MembershipChange[];
  evaluated: number;
}

/** What caused an evaluation: a contact change (all segments), an event of a type, or a score change. */
export type Trigger = { kind: "contact" } | { kind: "event"; eventType?: string } | { kind: "score" };

const CHUNK = 500;

/**
 * The workspace's dynamic segments for the hot path, kept in process while a
 * shared version probe (count, newest update and creation) says they are
 * unchanged (lib/versioned-cache.ts). Every write to a segment bumps
 * `updated_at`, so any node sees a change on its next read.
 */
const segmentCache = new VersionedCache<DynamicSegment[]>(segmentsVersionProbe, loadDynamicSegments, {
  area: "segments",
});

/**
 * The segments a trigger could affect, plus every segment that depends on
 * one of them (transitively), in dependency levels: a level only reads the
 * membership of segments in earlier levels or outside the set.
 */
export function affectedLevels(all: DynamicSegment[], trigger: Trigger): DynamicSegment[][] {
  const seeds = all.filter((s) => {
    if (trigger.kind === "contact") return true;
    if (trigger.kind === "score") return s.usesScore;
    return trigger.eventType === undefined
      ? s.eventTypes.length > 0
      : s.eventTypes.includes(trigger.eventType);
  });
  const affected = new Set(seeds.map((s) => s.id));
  let grew = true;
  while (grew) {
    grew = false;
    for (const s of all) {
      if (!affected.has(s.id) && s.dependsOn.some((d) => affected.has(d))) {
        affected.add(s.id);
        grew = true;
      }
    }
  }
  return dependencyLevels(all.filter((s) => affected.has(s.id)));
}

/** Kahn's layering over `dependsOn` restricted to the given set (filters are acyclic by validation). */
export function dependencyLevels(segments: DynamicSegment[]): DynamicSegment[][] {
  const inSet = new Set(segments.map((s) => s.id));
  const placed = new Set<string>();
  const levels: DynamicSegment[][] = [];
  let remaining = segments;
  while (remaining.length) {
    const level = remaining.filter((s) => s.dependsOn.every((d) => !inSet.has(d) || placed.has(d)));
    if (level.length === 0) throw new Error("Segment dependencies form a cycle");
    for (const s of level) placed.add(s.id);
    levels.push(level);
    remaining = remaining.filter((s) => !placed.has(s.id));
  }
  return levels;
}

/** Predicates and current membership of contacts for one dependency level, in one query. */
async function evaluateLevel(
  workspaceId: WorkspaceId,
  contactIds: string[],
  level: DynamicSegment[],
  transaction?: Transaction,
): Promise<LevelResult> {
  const binds = Binds.inWorkspace([contactIds, level.map((s) => s.id)]);
  const predicates = level.map((s) => compileFilter(s.filter, binds, { mode: "row", workspaceParam: "$1" }));
  const rows = await levelMembership(workspaceId, binds, predicates, transaction);
  const enter: MembershipChange[] = [];
  const exit: MembershipChange[] = [];
  for (const row of rows) {
    const current = new Set(row.cur);
    level.forEach((s, k) => {
      if (row.m[k] && !current.has(s.id)) enter.push({ segmentId: s.id, contactId: row.id });
      if (!row.m[k] && current.has(s.id)) exit.push({ segmentId: s.id, contactId: row.id });
    });
  }
  return { enter, exit, evaluated: rows.length * level.length, found: rows.map((r) => r.id) };
}

interface LevelResult {
  enter: MembershipChange[];
  exit: MembershipChange[];
  evaluated: number;
  /** The contacts evaluated (those of the workspace among the ones asked). */
  found: string[];
}

interface ProbeItem {
  workspaceId: WorkspaceId;
  contactIds: string[];
  segments: DynamicSegment[];
}

/** Callers (by index) that share one evaluation: the same workspace and segments. */
function sharing<I extends { workspaceId: WorkspaceId }>(
  items: I[],
  segmentIds: (item: I) => string,
): number[][] {
  const groups = new Map<string, number[]>();
  items.forEach((item, i) => {
    const key = `${item.workspaceId} ${segmentIds(item)}`;
    groups.set(key, [...(groups.get(key) ?? []), i]);
  });
  return [...groups.values()];
}

/** The part of a shared evaluation of `segmentCount` segments that is about one caller's contacts. */
function shareOf(all: LevelResult, contactIds: string[], segmentCount: number): LevelResult {
  const mine = new Set(contactIds);
  const found = all.found.filter((id) => mine.has(id));
  return {
    enter: all.enter.filter((c) => mine.has(c.contactId)),
    exit: all.exit.filter((c) => mine.has(c.contactId)),
    evaluated: found.length * segmentCount,
    found,
  };
}

/**
 * The optimistic pass of concurrent evaluations (every event runs one or two)
 * shares one query per workspace and segment set (lib/batcher.ts): it only
 * reads, so merging callers' contacts changes no answer. Each caller gets the
 * changes of its own contacts.
 */
async function probeMany(items: ProbeItem[]): Promise<LevelResult[]> {
  const answers: LevelResult[] = [];
  for (const indices of sharing(items, (item) => item.segments.map((s) => s.id).join(","))) {
    const { workspaceId, segments } = items[indices[0]];
    const ids = [...new Set(indices.flatMap((i) => items[i].contactIds))];
    const all = await evaluateLevel(workspaceId, ids, segments);
    for (const i of indices) answers[i] = shareOf(all, items[i].contactIds, segments.length);
  }
  return answers;
}

const prober = new MicroBatcher(probeMany, { maxBatch: 100, lanes: 1 });

interface ApplyItem {
  workspaceId: WorkspaceId;
  contactIds: string[];
  levels: DynamicSegment[][];
  eventId?: string;
}

/**
 * Evaluations whose optimistic pass found a change run again under their
 * contacts' locks and write, many callers in one transaction (one commit):
 * per workspace and segment set, one query and one write per level. Each
 * caller gets the changes of its own contacts.
 */
async function applyMany(items: ApplyItem[]): Promise<EvaluationResult[]> {
  const sequelize = await database();
  const results = items.map((): EvaluationResult => ({ entered: [], exited: [], evaluated: 0 }));
  await sequelize.transaction(async (transaction) => {
    const causes = new Map<string, string>();
    for (const item of items) {
      for (const id of item.contactIds) if (item.eventId && !causes.has(id)) causes.set(id, item.eventId);
    }
    await lockContacts([...new Set(items.flatMap((item) => item.contactIds))], causes, transaction);
    const levelIds = (item: ApplyItem) =>
      item.levels.map((level) => level.map((s) => s.id).join(",")).join(" ");
    for (const indices of sharing(items, levelIds)) {
      const { workspaceId, levels } = items[indices[0]];
      const ids = [...new Set(indices.flatMap((i) => items[i].contactIds))];
      for (const level of levels) {
        const all = await evaluateLevel(workspaceId, ids, level, transaction);
        await applyChanges(all.enter, all.exit, transaction);
        for (const i of indices) {
          const share = shareOf(all, items[i].contactIds, level.length);
          results[i].entered.push(...share.enter);
          results[i].exited.push(...share.exit);
          results[i].evaluated += share.evaluated;
        }
      }
    }
  });
  return results;
}

/** Contacts of an evaluation that may share its transaction with others: at most 50 callers of 8 contacts each. */
const SHARED_APPLY_MAX = 8;
const applier = new MicroBatcher(applyMany, { maxBatch: 50, lanes: 2 });

/**
 * Re-evaluate contacts against the segments the trigger could affect and
 * apply the difference. One query per dependency level computes every
 * predicate and the current membership of each contact. Most evaluations
 * change nothing: those are answered from a plain read; only when something
 * changes does the evaluation run again under the contacts' locks and write.
 * Concurrent evaluations share their queries and transactions (lib/batcher.ts).
 */
export async function evaluateContacts(
  workspaceId: WorkspaceId,
  contactIds: string[],
  trigger: Trigger,
  eventId?: string,
  known?: Versions,
): Promise<EvaluationResult> {
  const result: EvaluationResult = { entered: [], exited: [], evaluated: 0 };
  const ids = [...new Set(contactIds)];
  if (ids.length === 0) return result;
  const levels = affectedLevels(await segmentCache.get(workspaceId, known), trigger);
  if (levels.length === 0) return result;

  for (let i = 0; i < ids.length; i += CHUNK) {
    const chunk = ids.slice(i, i + CHUNK);
    // Optimistic pass, one query over every affected segment: if nothing would change, membership
    // already agrees with the data (a later level reads only memberships that stay as they are).
    const probe = await prober.add({ workspaceId, contactIds: chunk, segments: levels.flat() });
    if (probe.enter.length === 0 && probe.exit.length === 0) {
      result.evaluated += probe.evaluated;
      continue;
    }
    const item = { workspaceId, contactIds: chunk, levels, eventId };
    // A batch's advisory locks share PostgreSQL's lock table: only small evaluations go together.
    const [applied] = chunk.length <= SHARED_APPLY_MAX ? [await applier.add(item)] : await applyMany([item]);
    result.entered.push(...applied.entered);
    result.exited.push(...applied.exited);
    result.evaluated += applied.evaluated;
  }
  return result;
}

export interface RecomputeResult {
  added: number;
  removed: number;
  memberCount: number;
}

/** A recompute's entries and exits, when the caller announces them (the time-driven refresh). */
export interface RecomputeChanges {
  entered: MembershipChange[];
  exited: MembershipChange[];
}

/**
 * Reconcile one dynamic segment with its filter over the whole workspace:
 * only the difference is written (an anti-join each way), so an unchanged
 * segment costs one scan. Reports what changed.
 */
export async function recomputeSegment(
  workspaceId: WorkspaceId,
  segmentId: string,
  filter: FilterGroup,
  changes?: RecomputeChanges,
): Promise<RecomputeResult> {
  const sequelize = await database();
  return sequelize.transaction(async (transaction) => {
    await holdRecompute(segmentId, transaction);
    const binds = Binds.inWorkspace([segmentId]);
    const predicate = compileFilter(filter, binds, { mode: "set", workspaceParam: "$1" });
    // The changed ids come back only when asked for: a first build may add a million.
    const collect = changes
      ? `, ARRAY(SELECT contact_id FROM added) AS entered, ARRAY(SELECT contact_id FROM removed) AS exited`
      : "";
    const row = await reconcileSegment(workspaceId, binds, predicate, collect, transaction);
    if (changes) {
      for (const contactId of row.entered ?? []) changes.entered.push({ segmentId, contactId });
      for (const contactId of row.exited ?? []) changes.exited.push({ segmentId, contactId });
    }
    return { added: Number(row.added), removed: Number(row.removed), memberCount: Number(row.member_count) };
  });
}

/** Recompute a segment, then every segment that depends on it, in dependency order. */
export async function recomputeWithDependents(
  workspaceId: WorkspaceId,
  segmentId: string,
  changes?: RecomputeChanges,
): Promise<RecomputeResult> {
  const all = await loadDynamicSegments(workspaceId);
  const self = all.find((s) => s.id === segmentId);
  if (!self) throw new Error(`Segment ${segmentId} is not a dynamic segment of this workspace`);
  const result = await recomputeSegment(workspaceId, segmentId, self.filter, changes);
  // Dependents read this segment's members, so they follow it, level by level.
  const reach = new Set([segmentId]);
  for (const level of dependencyLevels(all.filter((s) => s.id !== segmentId))) {
    for (const s of level) {
      if (s.dependsOn.some((d) => reach.has(d))) {
        reach.add(s.id);
        await recomputeSegment(workspaceId, s.id, s.filter, changes);
      }
    }
  }
  return result;
}

/** Full recompute of every segment a trigger could affect (e.g. all score-based ones after a recalculation). */
export async function recomputeAffected(
  workspaceId: WorkspaceId,
  trigger: Trigger,
): Promise<Record<string, RecomputeResult>> {
  const results: Record<string, RecomputeResult> = {};
  for (const level of affectedLevels(await loadDynamicSegments(workspaceId), trigger)) {
    for (const s of level) results[s.id] = await recomputeSegment(workspaceId, s.id, s.filter);
  }
  return results;
}

const REFRESH_BATCH = 20;
const REFRESH_MAX_BATCHES = 50;

export interface RefreshResult {
  refreshed: number;
  failed: number;
  entered: number;
  exited: number;
}

/**
 * Time passing: recompute (diff-based, with dependents) every time-relative
 * segment whose refresh is due, claimed segment by segment so replicas share
 * the work. `announce` receives each segment's entries and exits (logged by
 * the membership triggers like any recompute).
 */
export async function refreshTimeRelative(
  announce: (workspaceId: WorkspaceId, changes: RecomputeChanges) => void,
  onError: (segmentId: string, err: unknown) => void,
): Promise<RefreshResult> {
  const result: RefreshResult = { refreshed: 0, failed: 0, entered: 0, exited: 0 };
  for (let batch = 0; batch < REFRESH_MAX_BATCHES; batch += 1) {
    const due = await claimTimeRefresh(REFRESH_BATCH, config().segmentTimeRefreshMs);
    for (const segment of due) {
      const changes: RecomputeChanges = { entered: [], exited: [] };
      try {
        await recomputeWithDependents(segment.workspaceId, segment.id, changes);
      } catch (err) {
        // Deleted or changed since the claim: its next claim (or its own save) sets it right.
        result.failed += 1;
        onError(segment.id, err);
        continue;
      }
      result.refreshed += 1;
      result.entered += changes.entered.length;
      result.exited += changes.exited.length;
      announce(segment.workspaceId, changes);
    }
    if (due.length < REFRESH_BATCH) break;
  }
  return result;
}
