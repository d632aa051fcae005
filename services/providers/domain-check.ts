import { promises as dns } from "node:dns";
import { config } from "../../lib/config";

/**
 * Whether a sending domain is set up to be trusted by mailbox providers
 * (contract 4): its SPF record, the DKIM key at `<selector>._domainkey`, and
 * its DMARC policy, each `pass`, `missing` or `invalid` with the record and
 * what is wrong. The record checks are pure; `checkDomain` looks them up
 * with node's resolver (servers from DNS_SERVERS when set).
 */

export interface RecordCheck {
  status: "pass" | "missing" | "invalid";
  record: string | null;
  problem: string | null;
}

const pass = (record: string): RecordCheck => ({ status: "pass", record, problem: null });
const invalid = (record: string | null, problem: string): RecordCheck => ({
  status: "invalid",
  record,
  problem,
});

/** RFC 7208 terms: mechanisms with their qualifiers, and the two modifiers. */
const SPF_TERM =
  /^[+\-~?]?(all|include:\S+|a(:\S+)?(\/\d{1,3})?(\/\/\d{1,3})?|mx(:\S+)?(\/\d{1,3})?(\/\/\d{1,3})?|ip4:[\d.]+(\/\d{1,2})?|ip6:[\da-f:.]+(\/\d{1,3})?|exists:\S+|ptr(:\S+)?)$|^(redirect|exp)=\S+$/i;

export function checkSpf(txt: string[]): RecordCheck {
  const records = txt.filter((r) => /^v=spf1(\s|$)/i.test(r.trim()));
  if (!records.length)
    return { status: "missing", record: null, problem: "No TXT record starts with v=spf1" };
  if (records.length > 1)
    return invalid(records.join(" | "), "Several SPF records: receivers treat that as an error (permerror)");
  const [record] = records;
  const terms = record.trim().split(/\s+/).slice(1);
  const bad = terms.find((term) => !SPF_TERM.test(term));
  if (bad) return invalid(record, `Not an SPF term: ${bad}`);
  if (!terms.some((t) => /^[+\-~?]?all$/i.test(t) || /^redirect=/i.test(t)))
    return invalid(record, "Ends without an all mechanism or a redirect: mail from anywhere is neutral");
  return pass(record);
}

/** `tag=value` pairs of a DKIM or DMARC record; null when a part is not one. */
function tags(record: string): Map<string, string> | null {
  const map = new Map<string, string>();
  for (const part of record
    .split(";")
    .map((p) => p.trim())
    .filter(Boolean)) {
    const at = part.indexOf("=");
    if (at < 1) return null;
    map.set(part.slice(0, at).trim().toLowerCase(), part.slice(at + 1).replace(/\s+/g, ""));
  }
  return map;
}

export function checkDkim(txt: string[]): RecordCheck {
  // The selector's name is DKIM's alone: every TXT record there is meant as its key.
  const records = txt;
  if (!records.length)
    return { status: "missing", record: null, problem: "No DKIM key record at the selector" };
  if (records.length > 1) return invalid(records.join(" | "), "Several DKIM records at one selector");
  const [record] = records;
  const parsed = tags(record);
  if (!parsed) return invalid(record, "Not a list of tag=value pairs");
  const version = parsed.get("v");
  if (version !== undefined && version !== "DKIM1") return invalid(record, `Unknown version v=${version}`);
  const key = parsed.get("p");
  if (key === undefined) return invalid(record, "No public key (p=)");
  if (key === "") return invalid(record, "The key is revoked (empty p=)");
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(key)) return invalid(record, "The public key is not base64");
  const type = parsed.get("k") ?? "rsa";
  if (type !== "rsa" && type !== "ed25519") return invalid(record, `Unknown key type k=${type}`);
  return pass(record);
}

export function checkDmarc(txt: string[]): RecordCheck {
  const records = txt.filter((r) => /^v=DMARC1(\s*;|$)/i.test(r.trim()));
  if (!records.length)
    return { status: "missing", record: null, problem: "No TXT record starts with v=DMARC1" };
  if (records.length > 1)
    return invalid(records.join(" | "), "Several DMARC records: receivers ignore them all");
  const [record] = records;
  const parsed = tags(record);
  if (!parsed) return invalid(record, "Not a list of tag=value pairs");
  const policy = parsed.get("p");
  if (!policy) return invalid(record, "No policy (p=none, quarantine or reject)");
  if (!["none", "quarantine", "reject"].includes(policy.toLowerCase()))
    return invalid(record, `Unknown policy p=${policy}`);
  const percent = parsed.get("pct");
  if (percent !== undefined && !/^(\d{1,2}|100)$/.test(percent))
    return invalid(record, `pct=${percent} is not 0-100`);
  return pass(record);
}

/** The TXT records at `name` (chunks joined); [] when there are none; null when the lookup itself failed. */
async function txtAt(resolver: dns.Resolver, name: string): Promise<string[] | { error: string }> {
  try {
    return (await resolver.resolveTxt(name)).map((chunks) => chunks.join(""));
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === "ENOTFOUND" || code === "ENODATA") return [];
    return { error: `The DNS lookup of ${name} failed (${code ?? String(err)})` };
  }
}

export interface DomainCheck {
  domain: string;
  spf: RecordCheck;
  dkim: RecordCheck;
  dmarc: RecordCheck;
}

export async function checkDomain(domain: string, selector: string): Promise<DomainCheck> {
  const resolver = new dns.Resolver({ timeout: 3000, tries: 2 });
  if (config().dnsServers.length) resolver.setServers(config().dnsServers);
  const [spf, dkim, dmarc] = await Promise.all([
    txtAt(resolver, domain),
    txtAt(resolver, `${selector}._domainkey.${domain}`),
    txtAt(resolver, `_dmarc.${domain}`),
  ]);
  const judge = (found: string[] | { error: string }, check: (txt: string[]) => RecordCheck) =>
    Array.isArray(found) ? check(found) : invalid(null, found.error);
  return { domain, spf: judge(spf, checkSpf), dkim: judge(dkim, checkDkim), dmarc: judge(dmarc, checkDmarc) };
}
