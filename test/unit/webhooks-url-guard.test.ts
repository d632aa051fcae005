import { isDeniedAddress, resolveTarget, targetProblem } from "../../services/webhooks/url-guard";

describe("webhook url guard", () => {
  test.each([
    "127.0.0.1",
    "10.1.2.3",
    "172.16.0.1",
    "192.168.1.1",
    "169.254.169.254",
    "100.64.0.1",
    "0.0.0.0",
    "224.0.0.1",
    "::1",
    "::",
    "fe80::1",
    "fd00::1",
    "fd00:ec2::254",
    "::ffff:127.0.0.1",
    "::ffff:7f00:1",
    "::127.0.0.1",
    "64:ff9b::7f00:1",
    "64:ff9b:1::a9fe:a9fe",
    "2002:a9fe:a9fe::",
    "::ffff:0:a9fe:a9fe",
    "2001:0:4136:e378:8000:63bf:3fff:fdd2",
    "2001:db8::1",
    "192.0.2.10",
    "198.51.100.7",
    "203.0.113.1",
    "198.18.0.1",
    "192.0.0.8",
    "255.255.255.255",
    "240.0.0.1",
    "not-an-ip",
  ])("denies %s", (address) => {
    expect(isDeniedAddress(address)).toBe(true);
  });

  test.each([
    "93.184.216.34",
    "8.8.8.8",
    "2606:4700:4700::1111",
    "::ffff:8.8.8.8",
    "64:ff9b::808:808",
    "2002:808:808::1",
  ])("allows %s", (address) => {
    expect(isDeniedAddress(address)).toBe(false);
  });

  test("only http(s) urls without credentials", () => {
    expect(targetProblem("https://example.com/hook")).toBeNull();
    expect(targetProblem("ftp://example.com/")).toMatch(/http/);
    expect(targetProblem("not a url")).toMatch(/http/);
    expect(targetProblem("https://user:pw@example.com/")).toMatch(/credentials/);
  });

  test.each([
    "http://127.0.0.1:8080/",
    "http://2130706433/",
    "http://0x7f.1/",
    "http://127.1/",
    "http://[::1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::127.0.0.1]/",
    "http://[64:ff9b::7f00:1]/",
    "http://[2002:a9fe:a9fe::]/",
    "http://[::ffff:0:a9fe:a9fe]/",
    "http://192.0.2.1/",
    "http://localhost:3000/",
    "http://foo.localhost/",
    "http://169.254.169.254/latest/meta-data",
    "http://metadata.google.internal/",
    "http://10.0.0.5/",
  ])("enforced: refuses %s", async (url) => {
    await expect(resolveTarget(url, true)).rejects.toThrow(/private|does not resolve/);
  });

  test("enforced: a public IP literal is allowed and pinned", async () => {
    await expect(resolveTarget("https://93.184.216.34/hook", true)).resolves.toMatchObject({
      address: "93.184.216.34",
      family: 4,
    });
  });

  test("not enforced: loopback is allowed (development and tests)", async () => {
    await expect(resolveTarget("http://127.0.0.1:9/", false)).resolves.toMatchObject({
      url: expect.any(URL),
    });
  });
});
