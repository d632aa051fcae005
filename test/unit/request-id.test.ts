import { ServiceBroker, type Context } from "moleculer";
import { RequestIdMiddleware, requestIdLogFields, requestIdOf } from "../../lib/request-id";

describe("requestIdOf", () => {
  test("keeps a caller's plain token, from X-Request-Id before X-Correlation-Id", () => {
    expect(requestIdOf({ "x-request-id": "req-1.a:b" })).toBe("req-1.a:b");
    expect(requestIdOf({ "x-correlation-id": "corr-2" })).toBe("corr-2");
    expect(requestIdOf({ "x-request-id": "req-1", "x-correlation-id": "corr-2" })).toBe("req-1");
  });

  test("makes a new id for none, or for one with spaces, control characters or over 128 characters", () => {
    for (const value of [undefined, "", "two words", "line\nbreak", "x".repeat(129), "ünïcode"]) {
      const id = requestIdOf(value === undefined ? {} : { "x-request-id": value });
      expect(id).toMatch(/^[0-9a-f]{32}$/);
    }
    expect(requestIdOf({})).not.toBe(requestIdOf({}));
  });
});

describe("RequestIdMiddleware", () => {
  const seen: Array<{ action: string; requestID: string | null; logged: object }> = [];
  const broker = new ServiceBroker({ logger: false, transporter: null, middlewares: [RequestIdMiddleware] });
  broker.createService({
    name: "a",
    actions: {
      // Calls and emits through the broker, as services do for system work: no context passed.
      async first(ctx: Context) {
        seen.push({ action: "a.first", requestID: ctx.requestID, logged: requestIdLogFields() });
        await broker.call("a.second");
        await broker.emit("a.happened");
        await broker.broadcast("a.happened", {}, "a");
      },
      second(ctx: Context) {
        seen.push({ action: "a.second", requestID: ctx.requestID, logged: requestIdLogFields() });
      },
    },
    events: {
      "a.happened"(ctx: Context) {
        seen.push({ action: "a.happened", requestID: ctx.requestID, logged: requestIdLogFields() });
      },
    },
  });
  beforeAll(() => broker.start());
  afterAll(() => broker.stop());

  test("the handlers of one request, and the calls and events they make through the broker, share its id", async () => {
    await broker.call("a.first", {}, { requestID: "req-42" });
    expect(seen).toEqual([
      { action: "a.first", requestID: "req-42", logged: { requestId: "req-42" } },
      { action: "a.second", requestID: "req-42", logged: { requestId: "req-42" } },
      { action: "a.happened", requestID: "req-42", logged: { requestId: "req-42" } },
      { action: "a.happened", requestID: "req-42", logged: { requestId: "req-42" } },
    ]);
    expect(requestIdLogFields()).toEqual({});
  });
});
