import { TracerExporters, type BrokerOptions, type TracerExporterOptions } from "moleculer";
import { sha256Hex } from "./crypto";

/** The exporters TRACING_EXPORTER may name (Moleculer's own); unset: tracing off. */
export const TRACING_EXPORTERS = ["console", "zipkin", "event"] as const;
export type TracingExporter = (typeof TRACING_EXPORTERS)[number];

export interface TracingConfig {
  exporter?: TracingExporter;
  /** Zipkin's base URL (`/api/v2/spans` is appended); Jaeger takes the same at its Zipkin port. */
  url: string;
  /** Share of requests traced, 0 to 1. */
  sampleRate: number;
  /** How often spans are sent, in seconds (Zipkin and Event). */
  intervalSeconds: number;
}

/**
 * Moleculer's trace id is the request id, which a caller may choose; Zipkin
 * takes 16 or 32 hex digits only and refuses a whole batch for one other.
 * An id that is not hex is sent as a hash of itself, so its spans still share
 * one trace (the request id stays in the spans' `requestID` tag).
 */
class ZipkinExporter extends TracerExporters.Zipkin {
  convertID(id: string | null): string | null {
    if (!id) return null;
    const hex = id.replace(/-/g, "");
    return /^[0-9a-fA-F]{16,}$/.test(hex) ? hex.substring(0, 16) : sha256Hex(id).substring(0, 16);
  }
}

/** The broker's tracing options: spans of every action and event, sent where TRACING_EXPORTER says. */
export function tracingOptions(cfg: TracingConfig): BrokerOptions["tracing"] {
  if (!cfg.exporter) return { enabled: false };
  const exporter =
    cfg.exporter === "zipkin"
      ? new ZipkinExporter({ baseURL: cfg.url, interval: cfg.intervalSeconds })
      : cfg.exporter === "event"
        ? { type: "Event", options: { interval: cfg.intervalSeconds } }
        : { type: "Console", options: { colors: false } };
  return {
    enabled: true,
    events: true,
    sampling: { rate: cfg.sampleRate },
    // Spans keep names, nodes, timings and request ids, never params or meta (passwords, tokens, principals).
    tags: { action: { params: false, meta: false }, event: { params: false, meta: false } },
    // Moleculer takes an exporter instance too; its typings name only the options form.
    exporter: exporter as TracerExporterOptions,
  };
}
