import dns from "node:dns/promises";
import net from "node:net";
import { config } from "../../lib/config";

/**
 * SSRF guard for outbound webhook targets (reference: reliability-security
 * 3.3). In production, unless WEBHOOK_ALLOW_PRIVATE_TARGETS=true, a target
 * that is or resolves to a loopback, private, link-local, CGNAT, multicast or
 * metadata address is refused, at create/update and again before every send
 * (the checked address is then pinned for the connection, so DNS cannot rebind).
 */
const DENY = new net.BlockList();
for (const [network, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
] as const) {
  DENY.addSubnet(network, prefix, "ipv4");
}
for (const [network, prefix] of [
  ["::", 128],
  ["::1", 128],
  ["fc00::", 7],
  ["fe80::", 10],
  ["ff00::", 8],
  ["fd00:ec2::", 32],
] as const) {
  DENY.addSubnet(network, prefix, "ipv6");
}

const DENIED_NAMES = new Set(["localhost", "metadata.google.internal", "metadata.amazonaws.com", "metadata"]);

export class TargetRefused extends Error {}

/** Whether the guard applies in this process. */
export function guardEnabled(): boolean {
  const cfg = config();
  return cfg.nodeEnv === "production" && !cfg.allowPrivateWebhookTargets;
}

export function isDeniedAddress(address: string): boolean {
  const family = net.isIP(address);
  if (family === 0) return true;
  const mapped = family === 6 ? /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address) : null;
  if (mapped) return DENY.check(mapped[1], "ipv4");
  return DENY.check(address, family === 4 ? "ipv4" : "ipv6");
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
  const refuse = () => new TargetRefused("url must not point to a private, loopback, link-local or metadata address");
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
