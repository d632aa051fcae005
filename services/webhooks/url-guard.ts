import dns from "node:dns/promises";
import net from "node:net";
import ipaddr from "ipaddr.js";
import { config } from "../../lib/config";

/**
 * SSRF guard for outbound webhook targets (reference: reliability-security
 * 3.3). In production, unless WEBHOOK_ALLOW_PRIVATE_TARGETS=true, only a
 * public unicast address passes, at create/update and again before every
 * send (the checked address is then pinned for the connection, so DNS cannot
 * rebind). ipaddr.js classifies addresses (IANA special-purpose registries:
 * private, loopback, link-local, CGNAT, documentation, benchmarking,
 * reserved, multicast...); an IPv6 address that carries an IPv4 one
 * (mapped, IPv4-compatible, RFC 6145/6052 translation, 6to4) is judged by
 * the IPv4 address it reaches.
 */
const DENIED_NAMES = new Set(["localhost", "metadata.google.internal", "metadata.amazonaws.com", "metadata"]);

export class TargetRefused extends Error {}

/** Whether the guard applies in this process. */
export function guardEnabled(): boolean {
  const cfg = config();
  return cfg.nodeEnv === "production" && !cfg.allowPrivateWebhookTargets;
}

/** The IPv4 address an IPv6 address leads to, when it embeds one. */
function embeddedIpv4(address: ipaddr.IPv6): ipaddr.IPv4 | null {
  const bytes = address.toByteArray();
  switch (address.range()) {
    case "ipv4Mapped":
    case "rfc6145":
    case "rfc6052":
      return ipaddr.fromByteArray(bytes.slice(12)) as ipaddr.IPv4;
    case "6to4":
      return ipaddr.fromByteArray(bytes.slice(2, 6)) as ipaddr.IPv4;
    default:
      // IPv4-compatible (::a.b.c.d, deprecated): 96 zero bits, then the address.
      return bytes.slice(0, 12).every((b) => b === 0)
        ? (ipaddr.fromByteArray(bytes.slice(12)) as ipaddr.IPv4)
        : null;
  }
}

export function isDeniedAddress(address: string): boolean {
  if (!net.isIP(address)) return true;
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === "ipv6") parsed = embeddedIpv4(parsed as ipaddr.IPv6) ?? parsed;
  return parsed.range() !== "unicast";
}

/** A usable outbound target: http or https, no credentials. Returns the reason when not. */
export function targetProblem(raw: string): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return "must be a valid http or https URL";
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return "must be a valid http or https URL";
  if (url.username || url.password) return "must not carry credentials";
  return null;
}

export interface ResolvedTarget {
  url: URL;
  /** The checked address to connect to, when the guard is on. */
  address?: string;
  family?: 4 | 6;
}

/** Check a target (and, when the guard is on, every address it resolves to). Throws TargetRefused. */
export async function resolveTarget(raw: string, enforce = guardEnabled()): Promise<ResolvedTarget> {
  const problem = targetProblem(raw);
  if (problem) throw new TargetRefused(`url ${problem}`);
  const url = new URL(raw);
  if (!enforce) return { url };
  const host = url.hostname.replace(/^\[|\]$/g, "").toLowerCase();
  const refuse = () =>
    new TargetRefused("url must not point to a private, loopback, link-local or metadata address");
  if (DENIED_NAMES.has(host) || host.endsWith(".localhost") || host.endsWith(".internal")) throw refuse();
  if (net.isIP(host)) {
    if (isDeniedAddress(host)) throw refuse();
    return { url, address: host, family: net.isIP(host) as 4 | 6 };
  }
  let addresses: Array<{ address: string; family: number }>;
  try {
    addresses = await dns.lookup(host, { all: true, verbatim: true });
  } catch {
    throw new TargetRefused(`url host ${host} does not resolve`);
  }
  if (addresses.length === 0 || addresses.some((a) => isDeniedAddress(a.address))) throw refuse();
  return { url, address: addresses[0].address, family: addresses[0].family as 4 | 6 };
}
