import { readEvents, verifyCallback } from "../../services/providers/kinds";
import {
  mailgunSignature,
  sendgridHeaders,
  sendgridKeys,
  twilioSignature,
  vonageBearer,
} from "../helpers/provider-signatures";

const now = new Date();
const old = Math.floor(now.getTime() / 1000) - 301;

describe("callback signatures, as each provider signs", () => {
  it("emailapi1: SendGrid's ECDSA signature of timestamp + body; a bad, a missing or a stale one fails", () => {
    const { privateKey, publicKey } = sendgridKeys();
    const other = sendgridKeys();
    const body = '[{"event":"delivered"}]';
    const config = { webhookPublicKey: publicKey };
    const cb = (headers: Record<string, string>, rawBody = body) => ({
      rawBody,
      headers: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v])),
      url: "",
    });
    expect(verifyCallback("emailapi1", cb(sendgridHeaders(privateKey, body)), config, now)).toBe(true);
    expect(verifyCallback("emailapi1", cb(sendgridHeaders(privateKey, body), `${body} `), config, now)).toBe(
      false,
    );
    expect(verifyCallback("emailapi1", cb(sendgridHeaders(other.privateKey, body)), config, now)).toBe(false);
    expect(verifyCallback("emailapi1", cb({}), config, now)).toBe(false);
    expect(verifyCallback("emailapi1", cb(sendgridHeaders(privateKey, body, old)), config, now)).toBe(false);
    expect(verifyCallback("emailapi1", cb(sendgridHeaders(privateKey, body)), {}, now)).toBe(false);
  });

  it("emailapi2: Mailgun's HMAC of timestamp + token in the body", () => {
    const body = (signature: unknown) => JSON.stringify({ signature, "event-data": { event: "delivered" } });
    const config = { webhookSigningKey: "mg-signing-key" };
    const cb = (rawBody: string) => ({ rawBody, headers: {}, url: "" });
    expect(verifyCallback("emailapi2", cb(body(mailgunSignature("mg-signing-key"))), config, now)).toBe(true);
    expect(verifyCallback("emailapi2", cb(body(mailgunSignature("wrong-key"))), config, now)).toBe(false);
    expect(verifyCallback("emailapi2", cb(body(undefined)), config, now)).toBe(false);
    expect(verifyCallback("emailapi2", cb(body(mailgunSignature("mg-signing-key", old))), config, now)).toBe(
      false,
    );
  });

  it("smsapi1: Twilio's HMAC-SHA1 of the URL and the sorted parameters", () => {
    const url = "https://cms.example.com/api/providers/sms/webhooks?providerId=p1";
    const form = { MessageSid: "SM1", MessageStatus: "delivered", To: "+1555", AccountSid: "AC1" };
    const rawBody = new URLSearchParams(form).toString();
    const config = { authToken: "twilio-token" };
    const cb = (signature?: string, at = url) => ({
      rawBody,
      headers: signature ? { "x-twilio-signature": signature } : {},
      url: at,
    });
    expect(verifyCallback("smsapi1", cb(twilioSignature("twilio-token", url, form)), config)).toBe(true);
    expect(verifyCallback("smsapi1", cb(twilioSignature("twilio-token", url, form), `${url}x`), config)).toBe(
      false,
    );
    expect(verifyCallback("smsapi1", cb(twilioSignature("other", url, form)), config)).toBe(false);
    expect(verifyCallback("smsapi1", cb(), config)).toBe(false);
  });

  it("smsapi2: Vonage's HS256 bearer token with the body's hash", () => {
    const body = '{"message_uuid":"u1","status":"delivered"}';
    const config = { signatureSecret: "vonage-signature-secret" };
    const cb = (authorization?: string, rawBody = body) => ({
      rawBody,
      headers: authorization ? { authorization } : {},
      url: "",
    });
    expect(verifyCallback("smsapi2", cb(vonageBearer("vonage-signature-secret", body)), config, now)).toBe(
      true,
    );
    expect(
      verifyCallback("smsapi2", cb(vonageBearer("vonage-signature-secret", body), `${body} `), config, now),
    ).toBe(false);
    expect(verifyCallback("smsapi2", cb(vonageBearer("other", body)), config, now)).toBe(false);
    expect(
      verifyCallback("smsapi2", cb(vonageBearer("vonage-signature-secret", body, old)), config, now),
    ).toBe(false);
    expect(verifyCallback("smsapi2", cb(), config, now)).toBe(false);
  });
});

describe("callback events in our words", () => {
  it("SendGrid: delivered, hard and soft bounces, drops, complaints, opens and clicks", () => {
    const events = readEvents(
      "emailapi1",
      JSON.stringify([
        { event: "processed", sg_message_id: "x.1" },
        { event: "delivered", sg_message_id: "sg1.filter0001", sg_event_id: "e1", messageId: "m1" },
        {
          event: "bounce",
          type: "bounce",
          sg_message_id: "sg1.f",
          sg_event_id: "e2",
          reason: "550 5.1.1 unknown",
        },
        { event: "bounce", type: "blocked", sg_message_id: "sg1.f", sg_event_id: "e3", reason: "421 later" },
        { event: "dropped", sg_message_id: "sg1.f", reason: "Bounced Address" },
        { event: "spamreport", sg_message_id: "sg1.f", sg_event_id: "e4" },
        { event: "open", sg_message_id: "sg1.f", sg_event_id: "e5" },
        { event: "click", sg_message_id: "sg1.f", sg_event_id: "e6", url: "https://example.com" },
      ]),
    );
    expect(events).toEqual([
      { kind: "delivered", messageId: "m1", providerMessageId: "sg1", eventId: "e1" },
      {
        kind: "bounced",
        messageId: null,
        providerMessageId: "sg1",
        eventId: "e2",
        hard: true,
        reason: "550 5.1.1 unknown",
      },
      {
        kind: "bounced",
        messageId: null,
        providerMessageId: "sg1",
        eventId: "e3",
        hard: false,
        reason: "421 later",
      },
      { kind: "failed", messageId: null, providerMessageId: "sg1", eventId: null, reason: "Bounced Address" },
      { kind: "complained", messageId: null, providerMessageId: "sg1", eventId: "e4" },
      { kind: "opened", messageId: null, providerMessageId: "sg1", eventId: "e5" },
      {
        kind: "clicked",
        messageId: null,
        providerMessageId: "sg1",
        eventId: "e6",
        url: "https://example.com",
      },
    ]);
    expect(readEvents("emailapi1", "not json")).toEqual([]);
  });

  it("Mailgun: permanent failures are hard bounces, temporary ones soft", () => {
    const event = (data: Record<string, unknown>) =>
      readEvents(
        "emailapi2",
        JSON.stringify({
          "event-data": {
            id: "ev1",
            message: { headers: { "message-id": "mg1@mg.example.com" } },
            "user-variables": { messageId: "m2" },
            ...data,
          },
        }),
      );
    expect(
      event({ event: "failed", severity: "permanent", "delivery-status": { description: "No such user" } }),
    ).toEqual([
      {
        kind: "bounced",
        messageId: "m2",
        providerMessageId: "mg1@mg.example.com",
        eventId: "ev1",
        hard: true,
        reason: "No such user",
      },
    ]);
    expect(event({ event: "failed", severity: "temporary" })[0]).toMatchObject({
      kind: "bounced",
      hard: false,
    });
    expect(event({ event: "complained" })[0]).toMatchObject({ kind: "complained" });
    expect(event({ event: "accepted" })).toEqual([]);
  });

  it("Mailgun: an inbound route's forwarded mail, signed in its fields, as an inbound message with its references", () => {
    const fields = {
      sender: "ann@example.com",
      recipient: "support@mg.acme.test",
      subject: "Re: News",
      "body-plain": "Yes please\n\n> News",
      "stripped-text": "Yes please",
      "Message-Id": "<in-9@mail.example.com>",
      "In-Reply-To": "<out-2@mg.acme.test>",
      References: "<out-1@mg.acme.test> <out-2@mg.acme.test>",
    };
    const form = (signature: Record<string, string>) =>
      new URLSearchParams({ ...fields, ...signature }).toString();
    const cb = (rawBody: string) => ({ rawBody, headers: {}, url: "" });
    const config = { webhookSigningKey: "mg-signing-key" };
    expect(verifyCallback("emailapi2", cb(form(mailgunSignature("mg-signing-key"))), config, now)).toBe(true);
    expect(verifyCallback("emailapi2", cb(form(mailgunSignature("wrong"))), config, now)).toBe(false);
    expect(verifyCallback("emailapi2", cb(form(mailgunSignature("mg-signing-key", old))), config, now)).toBe(
      false,
    );
    expect(verifyCallback("emailapi2", cb(new URLSearchParams(fields).toString()), config, now)).toBe(false);
    expect(readEvents("emailapi2", form(mailgunSignature("k")))).toEqual([
      {
        kind: "inbound",
        providerMessageId: "in-9@mail.example.com",
        eventId: "inbound:in-9@mail.example.com",
        from: "ann@example.com",
        to: "support@mg.acme.test",
        text: "Yes please",
        subject: "Re: News",
        references: ["out-1@mg.acme.test", "out-2@mg.acme.test"],
      },
    ]);
  });

  it("Twilio: statuses and incoming texts", () => {
    expect(readEvents("smsapi1", "MessageSid=SM1&MessageStatus=delivered")).toEqual([
      { kind: "delivered", messageId: null, providerMessageId: "SM1", eventId: "SM1:delivered" },
    ]);
    expect(
      readEvents("smsapi1", "MessageSid=SM1&MessageStatus=undelivered&ErrorCode=30003")[0],
    ).toMatchObject({
      kind: "failed",
      reason: "undelivered 30003",
    });
    expect(readEvents("smsapi1", "MessageSid=SM9&From=%2B15551230000&To=%2B15550001111&Body=STOP")).toEqual([
      {
        kind: "inbound",
        providerMessageId: "SM9",
        eventId: "SM9",
        from: "+15551230000",
        to: "+15550001111",
        text: "STOP",
      },
    ]);
    expect(readEvents("smsapi1", "MessageSid=SM1&MessageStatus=sent")).toEqual([]);
  });

  it("Vonage: statuses naming our message by client_ref, and inbound texts", () => {
    expect(
      readEvents("smsapi2", JSON.stringify({ message_uuid: "u1", status: "delivered", client_ref: "m3" })),
    ).toEqual([{ kind: "delivered", messageId: "m3", providerMessageId: "u1", eventId: "u1:delivered" }]);
    expect(
      readEvents(
        "smsapi2",
        JSON.stringify({ message_uuid: "u2", status: "rejected", error: { title: "Invalid number" } }),
      )[0],
    ).toMatchObject({ kind: "failed", reason: "Invalid number" });
    expect(
      readEvents(
        "smsapi2",
        JSON.stringify({ message_uuid: "u3", from: "15551230000", to: "15550002222", text: "start" }),
      ),
    ).toEqual([
      {
        kind: "inbound",
        providerMessageId: "u3",
        eventId: "u3",
        from: "+15551230000",
        to: "+15550002222",
        text: "start",
      },
    ]);
  });
});
