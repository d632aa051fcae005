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
    "not-an-ip",
  ])("denies %s", (address) => {
    expect(isDeniedAddress(address)).toBe(true);
  });

  test.each(["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111"])("allows %s", (address) => {
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
    "http://localhost:3000/",
    "http://foo.localhost/",
    "http://169.254.169.254/latest/meta-data",
    "http://metadata.google.internal/",
    "http://10.0.0.5/",
  ])("enforced: refuses %s", async (url) => {
    await expect(resolveTarget(url, true)).rejects.toThrow(/private|does not resolve/);
  });

  test("enforced: a public IP literal is allowed and pinned", async () => {
    await expect(resolveTarget("https://93.184.216.34/hook", true)).resolves.toMatchObject({ address: "93.184.216.34", family: 4 });
  });

  test("not enforced: loopback is allowed (development and tests)", async () => {
    await expect(resolveTarget("http://127.0.0.1:9/", false)).resolves.toMatchObject({ url: expect.any(URL) });
  });
});
