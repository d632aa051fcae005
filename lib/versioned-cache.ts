import { LRUCache } from "lru-cache";
import { MicroBatcher } from "./batcher";
import { queryAcrossWorkspacesPrepared } from "./database";
import type { WorkspaceId } from "./workspace-id";

/**
 * Per-workspace values built from rows that rarely change (segment
 * definitions, scoring rules) and read on every event. Each read asks a
 * cheap version probe, so a change committed on any node is seen by the next
 * read anywhere; the value is rebuilt only when the version moved.
 *
 * Under load the probes go together: reads that arrive while probes are
 * running share the next probe statement (lib/batcher.ts), for all their
 * workspaces at once. A read never joins a probe that started before it
 * arrived, so it never sees a version older than its own arrival.
 *
 * A caller that probed already (the events chain probes every cache of its
 * process once, with one statement, when the event arrives: `probeVersions`)
 * passes those versions to `get`, which then asks nothing.
 */
export class VersionedCache<T> {
  private readonly entries: LRUCache<string, { version: string; value: Promise<T> }>;
  private readonly probes: MicroBatcher<WorkspaceId, string>;

  constructor(
    /** The current version of each given workspace ("" when it has none), in one statement. */
    probe: (workspaceIds: WorkspaceId[]) => Promise<Map<string, string>>,
    /** Build the value of one workspace. */
    private readonly load: (workspaceId: WorkspaceId) => Promise<T>,
    private readonly options: { area?: string; maxEntries?: number } = {},
  ) {
    this.entries = new LRUCache({ max: options.maxEntries ?? 1000 });
    this.probes = new MicroBatcher(
      async (workspaceIds: WorkspaceId[]) => {
        const versions = await probe([...new Set(workspaceIds)]);
        return workspaceIds.map((id) => versions.get(id) ?? "");
      },
      { maxBatch: 500, lanes: 1 },
    );
  }

  /** The value at the version in `known` (probed since the caller's request arrived), else at a new probe's. */
  async get(workspaceId: WorkspaceId, known?: Versions): Promise<T> {
    const area = this.options.area;
    const version =
      area !== undefined && known?.[area] !== undefined ? known[area] : await this.probes.add(workspaceId);
    const cached = this.entries.get(workspaceId);
    if (cached?.version === version) return cached.value;
    // Concurrent readers of the same new version share one load; a failed load is not kept.
    const value = this.load(workspaceId);
    this.entries.set(workspaceId, { version, value });
    value.catch(() => {
      if (this.entries.get(workspaceId)?.value === value) this.entries.delete(workspaceId);
    });
    return value;
  }
}

/** A workspace's version of each cached area (e.g. `segments`, `scoringRules`). */
export type Versions = Record<string, string>;

/** The probe statements of the areas cached in this process, by area. */
const probeStatements = new Map<string, string>();

/**
 * A probe as one SQL statement selecting `workspace_id, version` for the
 * workspace ids in `$1`; registered under `area`, so `probeVersions` asks it
 * together with the others.
 */
export function sqlProbe(
  area: string,
  sql: string,
): (workspaceIds: WorkspaceId[]) => Promise<Map<string, string>> {
  probeStatements.set(area, sql);
  return async (workspaceIds) => {
    const rows = await queryAcrossWorkspacesPrepared<{ workspace_id: WorkspaceId; version: string }>(sql, [
      workspaceIds,
    ]);
    return new Map(rows.map((r) => [r.workspace_id, r.version]));
  };
}

const allProbes = new MicroBatcher(
  async (workspaceIds: WorkspaceId[]): Promise<Versions[]> => {
    const areas = [...probeStatements.keys()].sort();
    const rows = await queryAcrossWorkspacesPrepared<{
      area: string;
      workspace_id: WorkspaceId;
      version: string;
    }>(
      areas
        .map((area, i) => `SELECT '${area}' AS area, p${i}.* FROM (${probeStatements.get(area)}) p${i}`)
        .join(" UNION ALL "),
      [[...new Set(workspaceIds)]],
    );
    return workspaceIds.map((ws) => {
      const versions: Versions = Object.fromEntries(areas.map((area) => [area, ""]));
      for (const row of rows) if (row.workspace_id === ws) versions[row.area] = row.version;
      return versions;
    });
  },
  { maxBatch: 500, lanes: 1 },
);

/** Every cached area's version for the workspace, in one statement shared with concurrent callers (none cached here: undefined). */
export function probeVersions(workspaceId: WorkspaceId): Promise<Versions | undefined> {
  return probeStatements.size ? allProbes.add(workspaceId) : Promise.resolve(undefined);
}
