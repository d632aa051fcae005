import { PassThrough } from "node:stream";
import type { WorkspaceId } from "../../lib/tenancy";

/**
 * The website script's open event streams (server-sent events) of one
 * process: each gets `ping` every heartbeat, leaves the set when its
 * visitor goes (the gateway unpipes it), and all end when the service stops.
 */

export interface VisitorStream {
  workspaceId: WorkspaceId;
  contactId: string | null;
  stream: PassThrough;
  send(event: string, data: unknown): void;
}

export class EventStreams {
  private readonly open = new Set<VisitorStream>();
  private timer?: NodeJS.Timeout;

  constructor(private readonly heartbeatMs: number) {}

  /** A new stream for a visitor of the workspace, `ready` already written. */
  add(workspaceId: WorkspaceId, contactId: string | null): VisitorStream {
    const stream = new PassThrough();
    const visitor: VisitorStream = {
      workspaceId,
      contactId,
      stream,
      send: (event, data) => {
        if (!stream.writableEnded) stream.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
      },
    };
    const leave = () => this.open.delete(visitor);
    stream.once("unpipe", () => {
      leave();
      stream.end();
    });
    stream.once("close", leave);
    this.open.add(visitor);
    visitor.send("ready", {});
    this.timer ??= setInterval(() => {
      for (const v of this.open) v.send("ping", {});
    }, this.heartbeatMs);
    this.timer.unref();
    return visitor;
  }

  of(workspaceId: WorkspaceId): VisitorStream[] {
    return [...this.open].filter((v) => v.workspaceId === workspaceId);
  }

  get size(): number {
    return this.open.size;
  }

  /** Shutdown: every stream ends (browsers reconnect to another replica). */
  closeAll(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    for (const v of this.open) v.stream.end();
    this.open.clear();
  }
}
