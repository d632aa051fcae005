import type { ServiceBroker } from "moleculer";
import ipaddr from "ipaddr.js";
import { countMessages } from "../../lib/business-metrics";
import { isServiceAvailable } from "../../lib/registry";
import { systemCall } from "../../lib/system-call";
import { trackingUrl } from "./links";
import type { EngagedRow, MessageRow } from "./messages.repo";

/**
 * Open and click tracking of email HTML (contract 6): links rewritten to
 * signed short-link redirects, an open pixel, and telling people from
 * machines (mail-privacy proxies that fetch every image, link scanners that
 * follow every link), whose opens and clicks are recorded with
 * `metadata.machine: true` and left out of the counters.
 */

const HREF = /(<a\b[^>]*?\bhref\s*=\s*)(["'])(https?:\/\/[^"']+)\2/gi;
const decodeAmp = (url: string) => url.replace(/&amp;/g, "&");

/** The http(s) links of the HTML a person may click, except our own unsubscribe and preference links. */
export function trackableLinks(html: string, publicUrl: string): string[] {
  const urls = new Set<string>();
  for (const match of html.matchAll(HREF)) {
    const url = decodeAmp(match[3]);
    if (!url.startsWith(`${publicUrl}/api/`)) urls.add(url);
  }
  return [...urls];
}

/** Each trackable link through its short-link redirect. */
export function rewriteLinks(html: string, messageId: string, codes: Map<string, string>): string {
  return html.replace(HREF, (whole, head: string, quote: string, raw: string) => {
    const code = codes.get(decodeAmp(raw));
    return code ? `${head}${quote}${trackingUrl(messageId, code).replace(/&/g, "&amp;")}${quote}` : whole;
  });
}

/** The open pixel, last in the body. */
export function addOpenPixel(html: string, messageId: string): string {
  const pixel = `<img src="${trackingUrl(messageId).replace(/&/g, "&amp;")}" width="1" height="1" alt="" style="display:block;border:0;width:1px;height:1px">`;
  return /<\/body>/i.test(html) ? html.replace(/<\/body>/i, `${pixel}</body>`) : `${html}${pixel}`;
}

/**
 * Security scanners and link checkers that open or follow links by
 * themselves. Gmail's GoogleImageProxy and Yahoo's YahooMailProxy are not
 * here: they fetch the image when the reader opens the mail, so their opens
 * are the person's (README, "Tracking: opens and clicks").
 */
const MACHINE_AGENTS =
  /Barracuda|Proofpoint|Mimecast|MessageLabs|Symantec|TrendMicro|Trend Micro|Sophos|FireEye|Forcepoint|SafeLinks|Microsoft Office Protection|bot\b|crawler|spider|python-requests|python-urllib|curl\/|wget|go-http-client|okhttp|java\/|HeadlessChrome|facebookexternalhit|Slackbot|LinkPreview/i;

/**
 * Apple's own network (17.0.0.0/8, Apple's ARIN allocation): Apple Mail
 * Privacy Protection fetches every image through Apple's proxies when the
 * mail arrives, read or not, and sends no telling user agent.
 */
const APPLE_PROXY_RANGES = ["17.0.0.0/8"].map((cidr) => ipaddr.parseCIDR(cidr));

/** Opens sooner than this after the send are machines (a prefetch): no person opens a mail that fast. */
export const MACHINE_OPEN_MS = 1000;
/** Clicks on other links of the same message this shortly before: a scanner following every link. */
export const SCANNER_BURST_MS = 2000;

/** Whether a request comes from Apple's mail-privacy proxies. */
function fromAppleProxy(ip: string | undefined): boolean {
  if (!ip || !ipaddr.isValid(ip)) return false;
  const address = ipaddr.process(ip); // an IPv4-mapped IPv6 address as the IPv4 it is
  return APPLE_PROXY_RANGES.some(
    ([range, bits]) => range.kind() === address.kind() && address.match(range, bits),
  );
}

/**
 * A machine's open or click: no user agent or a scanner's, sooner after the
 * send than a person could (a prefetch), or, for an open, Apple's privacy
 * proxy (it fetches images only; a click from Apple Mail comes from the
 * reader's own device).
 */
export function isMachine(
  kind: "open" | "click",
  request: { userAgent?: string; ip?: string },
  sentAt: Date | null,
  now: Date,
): boolean {
  if (!request.userAgent || MACHINE_AGENTS.test(request.userAgent)) return true;
  if (kind === "open" && fromAppleProxy(request.ip)) return true;
  return sentAt !== null && now.getTime() - new Date(sentAt).getTime() < MACHINE_OPEN_MS;
}

/** A transparent 1×1 GIF (43 bytes). */
export const PIXEL = Buffer.from("R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==", "base64");

/**
 * An open or click enters the activity chain (contract 8), so segments,
 * campaign triggers and scoring see it: ours (the pixel, a short link) and a
 * provider's alike.
 */
export async function recordActivity(
  broker: ServiceBroker,
  row: MessageRow,
  type: "message.open" | "message.click",
  extra: { machine: boolean; url?: string | null },
): Promise<void> {
  if (!row.contact_id || !isServiceAvailable(broker, "events")) return;
  await systemCall(broker, row.workspace_id, "events.record", {
    type,
    contactId: row.contact_id,
    metadata: {
      messageId: row.id,
      campaignId: row.campaign_id,
      channel: row.channel,
      templateId: row.template_id,
      variant: row.variant,
      ...extra,
    },
  });
}

/** A person's open or click that moved the message's status (to opened or clicked) counts it there. */
export function countEngagement(broker: ServiceBroker, row: EngagedRow): void {
  if (row.status_moved) countMessages(broker.metrics, row.channel, row.status);
}
