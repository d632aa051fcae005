import { MicroBatcher } from "./batcher";

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
 */
export class VersionedCache<T> {
  private readonly entries = new Map<string, { version: string; value: Promise<T> }>();
  private readonly probes: MicroBatcher<string, string>;

  constructor(
    /** The current version of each given workspace ("" when it has none), in one statement. */
    probe: (workspaceIds: string[]) => Promise<Map<string, string>>,
    /** Build the value of one workspace. */
    private readonly load: (workspaceId: string) => Promise<T>,
    private readonly maxEntries = 1000,
  ) {
    this.probes = new MicroBatcher(
      async (workspaceIds: string[]) => {
        const versions = await probe([...new Set(workspaceIds)]);
        return workspaceIds.map((id) => versions.get(id) ?? "");
      },
      { maxBatch: 500, lanes: 2 },
    );
  }

  async get(workspaceId: string): Promise<T> {
    const version = await this.probes.add(workspaceId);
    const cached = this.entries.get(workspaceId);
    if (cached?.version === version) return cached.value;
    // Concurrent readers of the same new version share one load; a failed load is not kept.
    const value = this.load(workspaceId);
    if (this.entries.size >= this.maxEntries && !cached) this.entries.clear();
    this.entries.set(workspaceId, { version, value });
    value.catch(() => {
      if (this.entries.get(workspaceId)?.value === value) this.entries.delete(workspaceId);
    });
    return value;
  }
}
