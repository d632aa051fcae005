import { basicAuth, errorText, refusal, send } from "../clients/http";
import { joinWithKeys } from "../clients/batch";
import {
  emailParts,
  type Accepted,
  type Attachment,
  type BatchRecipient,
  type ProviderClient,
} from "../clients/types";
import type { Emailapi2Config } from "./config";

/**
 * `emailapi2`: the Mailgun wire. `POST /v3/{domain}/messages`, form-encoded,
 * basic auth `api:<key>`; 200 `{id: "<...>", message}`. Our message id
 * travels as the variable `v:messageId`, headers as `h:<name>`. A batch is
 * one request to up to 1,000 `to` addresses with `recipient-variables`:
 * Mailgun sends each address its own copy, filling `%recipient.<key>%`
 * anywhere in the message, headers and variables included, from that
 * address's entry.
 */

const NAME = "emailapi2";
const RECIPIENT = "%recipient.";
const variable = (key: string) => `${RECIPIENT}${key}%`;

export function emailapi2Client(id: string, config: Emailapi2Config): ProviderClient {
  const base = (config.baseUrl ?? "https://api.mailgun.net").replace(/\/$/, "");
  const url = `${base}/v3/${encodeURIComponent(config.domain)}/messages`;
  const sender = (from: { email: string; name: string | null }) =>
    from.name ? `${JSON.stringify(from.name)} <${from.email}>` : from.email;

  /**
   * A message send; answers Mailgun's id without the angle brackets, as its events name the message.
   * Files go as `attachment` parts of a multipart form; without any the form is URL-encoded.
   */
  const post = async (form: URLSearchParams, attachments: Attachment[] = []): Promise<string> => {
    const authorization = basicAuth("api", config.apiKey);
    let init: Parameters<typeof send>[2];
    if (attachments.length) {
      const multipart = new FormData();
      for (const [name, value] of form) multipart.append(name, value);
      for (const a of attachments)
        multipart.append(
          "attachment",
          new Blob([Buffer.from(a.content, "base64")], { type: a.contentType }),
          a.filename,
        );
      init = { method: "POST", headers: { authorization }, body: multipart };
    } else {
      init = {
        method: "POST",
        headers: { authorization, "content-type": "application/x-www-form-urlencoded" },
        body: form.toString(),
      };
    }
    const answer = await send(NAME, url, init);
    if (answer.status !== 200)
      throw refusal(
        NAME,
        answer.status,
        errorText(answer.body, (j) => j.message),
      );
    return errorText(answer.body, (j) => j.id).replace(/^<|>$/g, "");
  };

  const sendOne: ProviderClient["send"] = async (message) => {
    const { from, subject, text, html, attachments } = emailParts(message);
    const form = new URLSearchParams();
    form.set("from", sender(from));
    form.set("to", message.to);
    form.set("subject", subject);
    if (text) form.set("text", text);
    if (html) form.set("html", html);
    if (message.replyTo) form.set("h:Reply-To", message.replyTo);
    for (const [name, value] of Object.entries(message.headers)) form.set(`h:${name}`, value);
    form.set("v:messageId", message.messageId);
    return { providerMessageId: await post(form, attachments) };
  };

  return {
    id,
    type: NAME,
    send: sendOne,
    // Mailgun takes 1,000 recipients per request; the holes bound keeps a full request well under its 25 MB.
    batchLimits: { recipients: 1000, holeBytes: 9000 },
    async sendBatch(batch) {
      // Mailgun would fill a `%recipient.` already in the content: such a batch goes one by one.
      const values = batch.recipients.flatMap(({ message, html, text }) => [
        ...html,
        ...(text ?? []),
        String(message.content.subject ?? ""),
        ...Object.values(message.headers),
      ]);
      if ([...batch.html, ...(batch.text ?? []), ...values].some((value) => value.includes(RECIPIENT)))
        return Promise.all(batch.recipients.map(({ message }) => sendOne(message)));
      const answers: Accepted[] = [];
      for (const round of rounds(batch.recipients)) {
        const headerNames = Object.keys(round[0].recipient.message.headers);
        const form = new URLSearchParams();
        form.set("from", sender(batch.from));
        for (const { recipient } of round) form.append("to", recipient.message.to);
        form.set("subject", variable("subject"));
        form.set(
          "html",
          joinWithKeys(batch.html, (i) => variable(`h${i}`)),
        );
        if (batch.text)
          form.set(
            "text",
            joinWithKeys(batch.text, (i) => variable(`t${i}`)),
          );
        if (batch.replyTo) form.set("h:Reply-To", batch.replyTo);
        for (const name of headerNames) form.set(`h:${name}`, variable(`h:${name}`));
        form.set("v:messageId", variable("v:messageId"));
        form.set(
          "recipient-variables",
          JSON.stringify(
            Object.fromEntries(
              round.map(({ recipient: { message, html, text } }) => [
                message.to,
                {
                  subject: String(message.content.subject ?? ""),
                  ...Object.fromEntries(html.map((hole, i) => [`h${i}`, hole])),
                  ...Object.fromEntries((text ?? []).map((hole, i) => [`t${i}`, hole])),
                  ...Object.fromEntries(headerNames.map((name) => [`h:${name}`, message.headers[name]])),
                  "v:messageId": message.messageId,
                },
              ]),
            ),
          ),
        );
        const shared = await post(form);
        // One id per request; each recipient's is it and its place, and callbacks name the message by v:messageId.
        round.forEach(({ at }, i) => (answers[at] = { providerMessageId: `${shared}.${i}` }));
      }
      return answers;
    },
  };
}

/**
 * Recipient variables are keyed by address, and a request's headers are
 * shared by name: recipients go in requests where each address appears once
 * and all carry the same header names (in their order of arrival).
 */
export function rounds(
  recipients: BatchRecipient[],
): Array<Array<{ recipient: BatchRecipient; at: number }>> {
  const out: Array<{
    headers: string;
    addresses: Set<string>;
    members: Array<{ recipient: BatchRecipient; at: number }>;
  }> = [];
  recipients.forEach((recipient, at) => {
    const headers = Object.keys(recipient.message.headers).sort().join("\n");
    const address = recipient.message.to.toLowerCase();
    let round = out.find((r) => r.headers === headers && !r.addresses.has(address));
    if (!round) out.push((round = { headers, addresses: new Set(), members: [] }));
    round.addresses.add(address);
    round.members.push({ recipient, at });
  });
  return out.map((r) => r.members);
}
