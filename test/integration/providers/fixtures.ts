import type { HttpClient } from "../../helpers/http";

/** A contact of the workspace `ws`, with SMS consent when asked (SMS sends need it). */
export async function newContact(
  client: HttpClient,
  ws: string,
  body: Record<string, unknown>,
  smsConsent = false,
): Promise<string> {
  const res = await client.post(`${ws}/contacts`, body);
  if (res.status !== 201) throw new Error(`contact create failed: ${res.status} ${res.text}`);
  if (smsConsent)
    await client.put(`${ws}/contacts/${res.body.id}/consent`, { channel: "sms", status: "opted_in" });
  return res.body.id;
}
