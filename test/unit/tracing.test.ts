import { loadConfig as load } from "../../lib/config";
import { tracingOptions } from "../../lib/tracing";

/** The configuration of an environment holding only `env`. */
const loadConfig = (env: Record<string, string>) => load(env as NodeJS.ProcessEnv);

describe("tracing from the environment", () => {
  test("off unless TRACING_EXPORTER names an exporter", () => {
    expect(loadConfig({}).tracing.exporter).toBeUndefined();
    expect(tracingOptions(loadConfig({}).tracing)).toEqual({ enabled: false });
    expect(tracingOptions(loadConfig({ TRACING_EXPORTER: "off" }).tracing)).toEqual({ enabled: false });
    expect(() => loadConfig({ TRACING_EXPORTER: "jaegr" })).toThrow(/TRACING_EXPORTER must be one of/);
  });

  test("console and event exporters by name; sampling clamped; no params or meta in spans", () => {
    const console = tracingOptions(
      loadConfig({ TRACING_EXPORTER: "Console", TRACING_SAMPLE_RATE: "7" }).tracing,
    );
    expect(console).toMatchObject({
      enabled: true,
      events: true,
      sampling: { rate: 1 },
      exporter: { type: "Console" },
      tags: { action: { params: false, meta: false }, event: { params: false, meta: false } },
    });
    const event = tracingOptions(
      loadConfig({ TRACING_EXPORTER: "event", TRACING_SAMPLE_RATE: "0.25", TRACING_INTERVAL_SECONDS: "2" })
        .tracing,
    );
    expect(event).toMatchObject({
      sampling: { rate: 0.25 },
      exporter: { type: "Event", options: { interval: 2 } },
    });
  });

  test("Zipkin at TRACING_URL, with every trace id as the 16 hex digits Zipkin takes", () => {
    const options = tracingOptions(
      loadConfig({ TRACING_EXPORTER: "zipkin", TRACING_URL: "http://zipkin:9411/" }).tracing,
    ) as unknown as { exporter: { opts: { baseURL: string }; convertID(id: string | null): string | null } };
    expect(options.exporter.opts.baseURL).toBe("http://zipkin:9411");
    const convert = (id: string | null) => options.exporter.convertID(id);
    expect(convert("0123456789abcdef0123456789abcdef")).toBe("0123456789abcdef");
    expect(convert("e3f4c314-7842-4d45-9a9e-bb3ccd01269f")).toBe("e3f4c31478424d45");
    expect(convert("req-42")).toMatch(/^[0-9a-f]{16}$/);
    expect(convert("req-42")).toBe(convert("req-42"));
    expect(convert(null)).toBeNull();
  });
});
