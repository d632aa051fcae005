import { checkDkim, checkDmarc, checkSpf } from "../../services/providers/domain-check";

describe("domain records", () => {
  it("SPF: one v=spf1 record of known terms ending in all or a redirect", () => {
    expect(
      checkSpf(["google-site-verification=x", "v=spf1 include:_spf.example.net ip4:192.0.2.0/24 ~all"]),
    ).toEqual({
      status: "pass",
      record: "v=spf1 include:_spf.example.net ip4:192.0.2.0/24 ~all",
      problem: null,
    });
    expect(checkSpf(["v=spf1 redirect=_spf.example.net"]).status).toBe("pass");
    expect(checkSpf(["something else"])).toMatchObject({ status: "missing", record: null });
    expect(checkSpf(["v=spf1 -all", "v=spf1 mx -all"])).toMatchObject({
      status: "invalid",
      problem: expect.stringMatching(/Several/),
    });
    expect(checkSpf(["v=spf1 include: ~all"])).toMatchObject({
      status: "invalid",
      problem: "Not an SPF term: include:",
    });
    expect(checkSpf(["v=spf1 ip4:192.0.2.1"])).toMatchObject({
      status: "invalid",
      problem: expect.stringMatching(/all/),
    });
  });

  it("DKIM: a key record at the selector, base64 and not revoked", () => {
    expect(checkDkim(["v=DKIM1; k=rsa; p=MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQC1"]).status).toBe("pass");
    expect(checkDkim([])).toMatchObject({ status: "missing" });
    expect(checkDkim(["v=DKIM1; p="])).toMatchObject({
      status: "invalid",
      problem: expect.stringMatching(/revoked/),
    });
    expect(checkDkim(["v=DKIM1; k=rsa"])).toMatchObject({ status: "invalid", problem: "No public key (p=)" });
    expect(checkDkim(["v=DKIM1; p=not*base64"])).toMatchObject({
      status: "invalid",
      problem: "The public key is not base64",
    });
    expect(checkDkim(["garbage"])).toMatchObject({
      status: "invalid",
      problem: "Not a list of tag=value pairs",
    });
    expect(checkDkim(["p=AAAA", "p=BBBB"])).toMatchObject({ status: "invalid" });
  });

  it("DMARC: one v=DMARC1 record with a known policy", () => {
    expect(checkDmarc(["v=DMARC1; p=reject; rua=mailto:d@example.com"]).status).toBe("pass");
    expect(checkDmarc([])).toMatchObject({ status: "missing" });
    expect(checkDmarc(["v=DMARC1; rua=mailto:d@example.com"])).toMatchObject({
      status: "invalid",
      problem: expect.stringMatching(/No policy/),
    });
    expect(checkDmarc(["v=DMARC1; p=maybe"])).toMatchObject({
      status: "invalid",
      problem: "Unknown policy p=maybe",
    });
    expect(checkDmarc(["v=DMARC1; p=none; pct=150"])).toMatchObject({ status: "invalid" });
    expect(checkDmarc(["v=DMARC1; p=none", "v=DMARC1; p=reject"])).toMatchObject({ status: "invalid" });
  });
});
