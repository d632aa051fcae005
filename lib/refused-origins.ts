import type { ServiceBroker } from "moleculer";
import { systemCall } from "./system-call";
import type { WorkspaceId } from "./tenancy";

/** An origin refused in this process since the last flush: how often, and when last. */
interface Refusals {
  count: number;
  lastAt: string;
}

/** Origins kept per workspace between flushes (what the workspace keeps too), and workspaces at once. */
const ORIGINS_PER_WORKSPACE = 10;
const MAX_WORKSPACES = 1_000;
/** An Origin header is the caller's to write: no more of it is kept. */
const MAX_ORIGIN_LENGTH = 200;

/**
 * Browsers that a workspace's `allowedOrigins` refused (a form post, a
 * website script request), so the site's owner sees why its page gets
 * nothing (the workspace's `refusedOrigins`). A refused page asks again on
 * every view, and a flood of refusals is cheap to send, so a refusal costs a
 * map update here; the workspaces seen are sent every `flushMs`, one call
 * each, at most ORIGINS_PER_WORKSPACE origins (the most recent). Bounded in
 * memory: past MAX_WORKSPACES, new workspaces wait for the next flush.
 */
export class RefusedOrigins {
  private pending = new Map<WorkspaceId, Map<string, Refusals>>();
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly broker: ServiceBroker,
    private readonly flushMs = 5_000,
    private readonly now: () => Date = () => new Date(),
  ) {}

  note(workspaceId: WorkspaceId, origin: string): void {
    let origins = this.pending.get(workspaceId);
    if (!origins) {
      if (this.pending.size >= MAX_WORKSPACES) return;
      origins = new Map();
      this.pending.set(workspaceId, origins);
    }
    const key = origin.slice(0, MAX_ORIGIN_LENGTH);
    const seen = origins.get(key);
    // Each origin is put last when seen, so the Map's first (in insertion order) is the stalest.
    origins.delete(key);
    if (!seen && origins.size >= ORIGINS_PER_WORKSPACE) origins.delete(origins.keys().next().value!);
    origins.set(key, { count: (seen?.count ?? 0) + 1, lastAt: this.now().toISOString() });
    if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), this.flushMs);
      this.timer.unref();
    }
  }

  /** Send what was noted (also when the service stops); a workspace that cannot take it loses it, with a log line. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const batch = this.pending;
    this.pending = new Map();
    this.flushing = this.flushing.then(() =>
      Promise.all(
        [...batch].map(([workspaceId, origins]) =>
          systemCall(this.broker, workspaceId, "workspaces.noteRefusedOrigins", {
            workspaceId,
            refused: [...origins].map(([origin, r]) => ({ origin, ...r })),
          }).catch((err: Error) =>
            this.broker.logger.warn(`Refused origins of workspace ${workspaceId} not kept: ${err.message}`),
          ),
        ),
      ).then(() => undefined),
    );
    return this.flushing;
  }
}
