import { Type } from "@sinclair/typebox";
import type { MetricRegistry } from "moleculer";
import { setQueueGauges, type QueueFigures } from "./business-metrics";
import { defineAction } from "./define-service";
import { Nullable } from "./schema";

/**
 * The durable queues' figures, each answered by the area that owns the
 * table (`<service>.queueStats`, an internal action that is also a timer
 * step of lib/periodic-steps.ts): rows due now, rows waiting for a later
 * time, and the age of the oldest due row. Each answer also sets the
 * queue gauges in the answering process's metrics, so Prometheus reads
 * them from whichever replica it scrapes (they agree: the rows are shared).
 * Counted over every workspace: a queue is claimed across workspaces.
 */
export const QueueStatsSchema = Type.Array(
  Type.Object({
    queue: Type.String(),
    due: Type.Integer({ minimum: 0 }),
    waiting: Type.Integer({ minimum: 0 }),
    oldestDueSeconds: Nullable(Type.Number({ description: "Null when no row is due" })),
  }),
);

/** How often each owner refreshes its queue gauges. */
export const QUEUE_STATS_EVERY_MS = 15_000;

/** The owners of the durable queues, each answering `<service>.queueStats` (a periodic step and the REPL's `queues`). */
export const QUEUE_OWNERS = [
  "messages",
  "webhooks",
  "campaigns",
  "jobs",
  "segments",
  "crm",
  "scoring",
  "inbox",
  "events",
  "providers",
] as const;

/**
 * The select list of a queue's figures, for a repo's statement over the
 * queue's rows: `due` is the SQL condition of a row due now, `dueAt` the
 * time it became due. Read its row with `queueFigures`.
 */
export const queueFiguresSql = (due: string, dueAt: string) =>
  `count(*) FILTER (WHERE ${due}) AS due, count(*) FILTER (WHERE NOT (${due})) AS waiting,
   EXTRACT(EPOCH FROM now() - min(${dueAt}) FILTER (WHERE ${due}))::float8 AS oldest`;

/** A row of `queueFiguresSql` (PostgreSQL counts come back as text). */
export interface QueueFiguresRow {
  due: string | number;
  waiting: string | number;
  oldest: number | null;
}

export function queueFigures(queue: string, row: QueueFiguresRow | undefined): QueueFigures {
  return {
    queue,
    due: Number(row?.due ?? 0),
    waiting: Number(row?.waiting ?? 0),
    oldestDueSeconds: row?.oldest == null ? null : Math.max(0, Number(row.oldest)),
  };
}

/**
 * The `queueStats` action of an area: its queues' figures, published to the
 * gauges as they are answered; `alsoPublish` sets the area's other gauges
 * read on the same clock.
 */
export function queueStatsAction(
  read: () => Promise<QueueFigures[]>,
  alsoPublish?: (metrics: MetricRegistry) => Promise<void>,
) {
  return defineAction({
    result: QueueStatsSchema,
    async handler(ctx) {
      const stats = await read();
      setQueueGauges(ctx.broker.metrics, stats);
      if (alsoPublish && ctx.broker.metrics.isEnabled()) await alsoPublish(ctx.broker.metrics);
      return stats;
    },
  });
}
