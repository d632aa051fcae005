import type { IncomingMessage } from "node:http";
import { resetConfig } from "../../lib/config";
import { clientIp } from "../../services/api/authenticate";

/** Who may speak for the client in X-Forwarded-For (TRUST_PROXY, through proxy-addr). */
function request(peer: string, headers: Record<string, string> = {}): IncomingMessage {
  return {
    socket: { remoteAddress: peer },
    connection: { remoteAddress: peer },
    headers,
  } as unknown as IncomingMessage;
}

function withTrust(setting: string | undefined, body: () => void) {
  const saved = process.env.TRUST_PROXY;
  if (setting === undefined) delete process.env.TRUST_PROXY;
  else process.env.TRUST_PROXY = setting;
  resetConfig();
  try {
    body();
  } finally {
    if (saved === undefined) delete process.env.TRUST_PROXY;
    else process.env.TRUST_PROXY = saved;
    resetConfig();
  }
}

test("by default a loopback or private peer is a proxy; a public peer cannot choose its IP", () => {
  withTrust(undefined, () => {
    expect(clientIp(request("127.0.0.1", { "x-forwarded-for": "203.0.113.9" }))).toBe("203.0.113.9");
    expect(clientIp(request("::ffff:10.1.2.3", { "x-forwarded-for": "203.0.113.9" }))).toBe("203.0.113.9");
    expect(clientIp(request("192.168.1.1", { "x-real-ip": "203.0.113.7" }))).toBe("203.0.113.7");
    expect(clientIp(request("198.51.100.20", { "x-forwarded-for": "1.2.3.4" }))).toBe("198.51.100.20");
    expect(clientIp(request("198.51.100.20", { "x-real-ip": "1.2.3.4" }))).toBe("198.51.100.20");
    // a client behind our proxy cannot prepend an address: the nearest untrusted one counts
    expect(clientIp(request("127.0.0.1", { "x-forwarded-for": "6.6.6.6, 203.0.113.9" }))).toBe("203.0.113.9");
  });
});

test("TRUST_PROXY=false ignores the headers; true believes every peer", () => {
  withTrust("false", () => {
    expect(clientIp(request("127.0.0.1", { "x-forwarded-for": "203.0.113.9", "x-real-ip": "1.1.1.1" }))).toBe(
      "127.0.0.1",
    );
  });
  withTrust("true", () => {
    expect(clientIp(request("198.51.100.20", { "x-forwarded-for": "1.2.3.4, 5.6.7.8" }))).toBe("1.2.3.4");
  });
});

test("a hop count, or named CIDRs", () => {
  withTrust("1", () => {
    expect(clientIp(request("198.51.100.20", { "x-forwarded-for": "1.2.3.4, 5.6.7.8" }))).toBe("5.6.7.8");
  });
  withTrust("198.51.100.0/24, loopback", () => {
    expect(clientIp(request("198.51.100.20", { "x-forwarded-for": "5.6.7.8" }))).toBe("5.6.7.8");
    expect(clientIp(request("10.0.0.1", { "x-forwarded-for": "5.6.7.8" }))).toBe("10.0.0.1");
  });
});
