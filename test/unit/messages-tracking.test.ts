import { isMachine, MACHINE_OPEN_MS } from "../../services/messages/tracking";

/** Who opened or clicked: the rules of README "Tracking: opens and clicks". */
describe("telling people from machines", () => {
  const sentAt = new Date("2026-01-01T10:00:00Z");
  const later = new Date("2026-01-01T10:05:00Z");
  const firefox = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";

  it("counts Gmail's and Yahoo's image proxies: they fetch as the reader opens", () => {
    const gmail = "Mozilla/5.0 (Windows NT 5.1; rv:11.0) Gecko Firefox/11.0 (via ggpht.com GoogleImageProxy)";
    expect(isMachine("open", { userAgent: gmail, ip: "66.249.84.1" }, sentAt, later)).toBe(false);
    expect(
      isMachine(
        "open",
        { userAgent: "YahooMailProxy; https://help.yahoo.com/kb/yahoo-mail-proxy-SLN28749.html" },
        sentAt,
        later,
      ),
    ).toBe(false);
  });

  it("leaves out opens from Apple's network (Mail Privacy Protection), IPv4 or IPv4-mapped", () => {
    expect(isMachine("open", { userAgent: firefox, ip: "17.58.101.20" }, sentAt, later)).toBe(true);
    expect(isMachine("open", { userAgent: firefox, ip: "::ffff:17.1.2.3" }, sentAt, later)).toBe(true);
    expect(isMachine("open", { userAgent: firefox, ip: "18.0.0.1" }, sentAt, later)).toBe(false);
    // A click is the reader's own device, even on Apple's network.
    expect(isMachine("click", { userAgent: firefox, ip: "17.58.101.20" }, sentAt, later)).toBe(false);
  });

  it("leaves out scanners, no agent at all, and a prefetch right after the send", () => {
    expect(isMachine("click", { userAgent: "Mimecast URL Protect" }, sentAt, later)).toBe(true);
    expect(isMachine("open", {}, sentAt, later)).toBe(true);
    const soon = new Date(sentAt.getTime() + MACHINE_OPEN_MS - 1);
    expect(isMachine("open", { userAgent: firefox, ip: "203.0.113.9" }, sentAt, soon)).toBe(true);
  });
});
