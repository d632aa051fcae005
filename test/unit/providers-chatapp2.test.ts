import crypto from "node:crypto";
import { handshakeAnswer, readEvents, verifyCallback } from "../../services/providers/chatapp2/callbacks";
import { messageBody, refusal } from "../../services/providers/chatapp2/client";
import {
  approvedOf,
  bodyParameterCount,
  bodyParameterNames,
  checkServiceWindow,
  checkTemplateContent,
  SERVICE_WINDOW_MS,
} from "../../services/providers/chatapp2/templates";

/** chatapp2 (WhatsApp Cloud wire): signatures, the handshake, events, the send body, refusals, templates, the window. */

const sign = (secret: string, body: string) =>
  `sha256=${crypto.createHmac("sha256", secret).update(body).digest("hex")}`;
const cb = (body: string, signature?: string) => ({
  rawBody: body,
  headers: signature ? { "x-hub-signature-256": signature } : {},
  url: "https://cms.example.test/api/providers/chatapp2/webhooks?providerId=p1",
});

describe("chatapp2 callbacks", () => {
  const body = '{"object":"whatsapp_business_account","entry":[]}';

  test("X-Hub-Signature-256 is the hex HMAC-SHA256 of the exact body with the app secret", () => {
    const config = { appSecret: "app-secret" };
    expect(verifyCallback(cb(body, sign("app-secret", body)), config)).toBe(true);
    expect(
      verifyCallback(cb(body, sign("app-secret", body).toUpperCase().replace("SHA256", "sha256")), config),
    ).toBe(true);
    expect(verifyCallback(cb(body, sign("other", body)), config)).toBe(false);
    expect(verifyCallback(cb(`${body} `, sign("app-secret", body)), config)).toBe(false);
    expect(verifyCallback(cb(body, sign("app-secret", body).slice(7)), config)).toBe(false);
    expect(verifyCallback(cb(body), config)).toBe(false);
    expect(verifyCallback(cb(body, sign("app-secret", body)), {})).toBe(false);
  });

  test("the handshake answers the challenge only to subscribe with the verify token", () => {
    const ok = { mode: "subscribe", verifyToken: "vt", challenge: "1158201444" };
    expect(handshakeAnswer(ok, "vt")).toBe("1158201444");
    expect(handshakeAnswer({ ...ok, verifyToken: "nope" }, "vt")).toBeNull();
    expect(handshakeAnswer({ ...ok, mode: "unsubscribe" }, "vt")).toBeNull();
    expect(handshakeAnswer({ ...ok, challenge: undefined }, "vt")).toBeNull();
    expect(handshakeAnswer(ok, undefined)).toBeNull();
  });

  test("messages become inbound events in E.164; statuses become delivered, opened (read) and failed with the code", () => {
    const payload = {
      object: "whatsapp_business_account",
      entry: [
        {
          id: "WABA",
          changes: [
            {
              field: "messages",
              value: {
                messaging_product: "whatsapp",
                metadata: { display_phone_number: "15550001111", phone_number_id: "1234" },
                contacts: [{ profile: { name: "Ana" }, wa_id: "447700900123" }],
                messages: [
                  {
                    from: "447700900123",
                    id: "wamid.t1",
                    timestamp: "1700000000",
                    type: "text",
                    text: { body: "Hi" },
                  },
                  {
                    from: "447700900123",
                    id: "wamid.b1",
                    type: "button",
                    button: { text: "Yes please", payload: "YES" },
                    context: { from: "15550001111", id: "wamid.out1" },
                  },
                  {
                    from: "447700900123",
                    id: "wamid.i1",
                    type: "interactive",
                    interactive: { type: "button_reply", button_reply: { id: "b1", title: "Tomorrow" } },
                  },
                  {
                    from: "447700900123",
                    id: "wamid.m1",
                    type: "image",
                    image: { caption: "Receipt", id: "x" },
                  },
                  { id: "wamid.nobody", type: "text", text: { body: "no sender" } },
                ],
                statuses: [
                  { id: "wamid.out1", status: "sent", recipient_id: "447700900123" },
                  { id: "wamid.out1", status: "delivered", recipient_id: "447700900123" },
                  { id: "wamid.out1", status: "read", recipient_id: "447700900123" },
                  {
                    id: "wamid.out2",
                    status: "failed",
                    errors: [{ code: 131026, title: "Message undeliverable" }],
                  },
                ],
              },
            },
          ],
        },
      ],
    };
    const inbound = { kind: "inbound", from: "+447700900123", to: "+15550001111" };
    expect(readEvents(JSON.stringify(payload))).toEqual([
      {
        ...inbound,
        providerMessageId: "wamid.t1",
        eventId: "wamid.t1",
        text: "Hi",
        references: [],
        sentAt: new Date("2023-11-14T22:13:20.000Z"),
      },
      {
        ...inbound,
        providerMessageId: "wamid.b1",
        eventId: "wamid.b1",
        text: "Yes please",
        references: ["wamid.out1"],
        sentAt: null,
      },
      {
        ...inbound,
        providerMessageId: "wamid.i1",
        eventId: "wamid.i1",
        text: "Tomorrow",
        references: [],
        sentAt: null,
      },
      {
        ...inbound,
        providerMessageId: "wamid.m1",
        eventId: "wamid.m1",
        text: "Receipt",
        references: [],
        sentAt: null,
      },
      {
        kind: "delivered",
        messageId: null,
        providerMessageId: "wamid.out1",
        eventId: "wamid.out1:delivered",
      },
      { kind: "opened", messageId: null, providerMessageId: "wamid.out1", eventId: "wamid.out1:read" },
      {
        kind: "failed",
        messageId: null,
        providerMessageId: "wamid.out2",
        eventId: "wamid.out2:failed",
        reason: "131026 Message undeliverable",
      },
    ]);
    expect(readEvents("not json")).toEqual([]);
    expect(readEvents('{"entry":[{"changes":[null,{"value":"x"}]}]}')).toEqual([]);
  });
});

describe("chatapp2 client", () => {
  test("a text and a template with its body parameters, to the number without its +", () => {
    expect(messageBody("+447700900123", { text: "Hello" })).toEqual({
      messaging_product: "whatsapp",
      recipient_type: "individual",
      to: "447700900123",
      type: "text",
      text: { preview_url: false, body: "Hello" },
    });
    expect(
      messageBody("+447700900123", {
        templateName: "order_update",
        language: "en_US",
        parameters: ["Ana", "42"],
      }),
    ).toEqual({
      messaging_product: "whatsapp",
      recipient_type: "individual",
      to: "447700900123",
      type: "template",
      template: {
        name: "order_update",
        language: { code: "en_US" },
        components: [
          {
            type: "body",
            parameters: [
              { type: "text", text: "Ana" },
              { type: "text", text: "42" },
            ],
          },
        ],
      },
    });
    expect(
      messageBody(
        "+447700900123",
        { templateName: "order_named", language: "en_US", parameters: ["Ana", "42"] },
        ["first_name", "order_id"],
      ),
    ).toMatchObject({
      template: {
        components: [
          {
            type: "body",
            parameters: [
              { type: "text", parameter_name: "first_name", text: "Ana" },
              { type: "text", parameter_name: "order_id", text: "42" },
            ],
          },
        ],
      },
    });
    expect(messageBody("+1555", { templateName: "hello_world", language: "en_US", parameters: [] })).toEqual(
      expect.objectContaining({ template: { name: "hello_world", language: { code: "en_US" } } }),
    );
  });

  test("refusals by their Graph codes and HTTP status, never by text", () => {
    const answer = (status: number, code: number | null, message = "some words") => ({
      status,
      headers: {},
      body: JSON.stringify({
        error: code === null ? { message } : { message, code, type: "OAuthException" },
      }),
    });
    const outcome = (e: ReturnType<typeof refusal>) => [e.transient, e.suppression];
    expect(outcome(refusal(answer(400, 131047, "Re-engagement message")))).toEqual([false, null]);
    expect(outcome(refusal(answer(400, 131026)))).toEqual([false, null]);
    expect(outcome(refusal(answer(400, 130429, "Rate limit hit")))).toEqual([true, null]);
    expect(outcome(refusal(answer(400, 131056)))).toEqual([true, null]);
    expect(outcome(refusal(answer(429, null)))).toEqual([true, null]);
    expect(outcome(refusal(answer(503, null)))).toEqual([true, null]);
    expect(outcome(refusal(answer(400, 131050)))).toEqual([false, "unsubscribed"]);
    // The same words under a permanent code stay permanent.
    expect(outcome(refusal(answer(400, 100, "Rate limit hit, try again later")))).toEqual([false, null]);
    expect(refusal(answer(400, 131047)).message).toContain("131047");
  });
});

describe("chatapp2 templates and the service window", () => {
  const body = (text: string) => [
    { type: "HEADER", format: "TEXT", text: "{{1}} header" },
    { type: "BODY", text },
  ];

  test("the body's distinct placeholders are its parameters; only APPROVED templates are kept", () => {
    expect(bodyParameterCount(body("Hi {{1}}, order {{2}} ships {{ 2 }}"))).toBe(2);
    expect(bodyParameterCount(body("Hi {{first_name}}"))).toBe(1);
    expect(bodyParameterCount(body("No placeholders"))).toBe(0);
    expect(bodyParameterCount([])).toBe(0);
    // Named placeholders keep the order the body first names them; positional ones have no names.
    expect(bodyParameterNames(body("Hi {{ first_name }}, order {{order_id}}, {{first_name}}"))).toEqual([
      "first_name",
      "order_id",
    ]);
    expect(bodyParameterNames(body("Hi {{1}}, order {{2}}"))).toBeNull();
    expect(bodyParameterNames(body("No placeholders"))).toBeNull();
    expect(
      approvedOf([
        { name: "a", language: "en_US", status: "APPROVED", category: "UTILITY", components: body("{{1}}") },
        { name: "b", language: "en_US", status: "REJECTED", category: "MARKETING", components: [] },
        { name: "c", language: "en_US", status: "PENDING", category: "MARKETING", components: [] },
        null,
      ]),
    ).toEqual([
      { name: "a", language: "en_US", category: "UTILITY", parameterCount: 1, components: body("{{1}}") },
    ]);
  });

  test("a template send names a synced template, in one of its languages, with its parameter count", () => {
    const templates = [
      { name: "order_update", language: "en_US", category: "UTILITY", parameterCount: 2, components: [] },
      { name: "order_update", language: "es", category: "UTILITY", parameterCount: 2, components: [] },
    ];
    const field = (content: Record<string, unknown>) => {
      try {
        checkTemplateContent(content, templates);
        return null;
      } catch (err) {
        return [
          (err as { code: number }).code,
          (err as { data: { details: [{ field: string }] } }).data.details[0].field,
        ];
      }
    };
    expect(field({ templateName: "order_update", language: "es", parameters: ["a", "b"] })).toBeNull();
    expect(field({ templateName: "nope", language: "en_US", parameters: [] })).toEqual([
      400,
      "content.templateName",
    ]);
    expect(field({ templateName: "order_update", language: "fr", parameters: ["a", "b"] })).toEqual([
      400,
      "content.language",
    ]);
    expect(field({ templateName: "order_update", language: "en_US", parameters: ["a"] })).toEqual([
      400,
      "content.parameters",
    ]);
    expect(field({ templateName: "order_update", language: "en_US" })).toEqual([400, "content.parameters"]);
  });

  test("a free-form message needs a message from the contact within 24 hours: else 409 INVALID_STATE naming the rule", () => {
    const now = new Date("2026-01-02T12:00:00.000Z");
    expect(() => checkServiceWindow(new Date(now.getTime() - SERVICE_WINDOW_MS + 1000), now)).not.toThrow();
    for (const last of [new Date(now.getTime() - SERVICE_WINDOW_MS), null]) {
      let error: { code?: number; type?: string; message?: string } = {};
      try {
        checkServiceWindow(last, now);
      } catch (err) {
        error = err as typeof error;
      }
      expect([error.code, error.type]).toEqual([409, "INVALID_STATE"]);
      expect(error.message).toMatch(/24-hour customer service window/);
    }
  });
});
