import { isSealed, open } from "../../lib/secret-box";
import { maskedConfig, openedConfig, storedConfig } from "../../services/providers/credentials";

describe("provider credentials", () => {
  it("seals each secret field and leaves the others as given", () => {
    const stored = storedConfig("smsapi1", {
      accountSid: "AC1",
      authToken: "token-123456",
      from: "+15550001",
    });
    expect(stored.accountSid).toBe("AC1");
    expect(isSealed(stored.authToken)).toBe(true);
    expect(open(stored.authToken as string)).toBe("token-123456");
  });

  it("masks secrets in answers: •••• and the last four, or •••• alone when short", () => {
    const stored = storedConfig("emailapi2", {
      apiKey: "key-abcdefgh1234",
      domain: "mg.example.com",
      webhookSigningKey: "short",
    });
    expect(maskedConfig("emailapi2", stored)).toEqual({
      apiKey: "••••1234",
      domain: "mg.example.com",
      webhookSigningKey: "••••",
    });
    expect(openedConfig("emailapi2", stored)).toMatchObject({
      apiKey: "key-abcdefgh1234",
      webhookSigningKey: "short",
    });
  });

  it("merges a change over the stored settings; the mask sent back keeps the secret, null removes a key", () => {
    const stored = storedConfig("smtp", {
      host: "mail.example.com",
      port: 587,
      username: "u",
      password: "pw-secret-99",
    });
    const changed = storedConfig("smtp", { port: 2525, password: "••••t-99", username: null }, stored);
    expect(changed).toMatchObject({ host: "mail.example.com", port: 2525, password: stored.password });
    expect(changed).not.toHaveProperty("username");
    const replaced = storedConfig("smtp", { password: "new-password" }, stored);
    expect(openedConfig("smtp", replaced).password).toBe("new-password");
  });

  it("refuses a mask of no stored secret, and says which field", () => {
    expect(() => storedConfig("emailapi1", { apiKey: "••••1234" })).toThrow(
      expect.objectContaining({
        code: 400,
        data: expect.objectContaining({ details: [expect.objectContaining({ field: "config.apiKey" })] }),
      }),
    );
  });

  it("checks the type's settings, naming config.<field>", () => {
    const fields = (config: Record<string, unknown>) => {
      try {
        storedConfig("smtp", config);
        return [];
      } catch (err) {
        return (err as { data: { details: Array<{ field: string }> } }).data.details.map((d) => d.field);
      }
    };
    expect(fields({ host: "h" })).toEqual(["config.port"]);
    expect(fields({ host: "h", port: 70000 })).toEqual(["config.port"]);
    expect(fields({ host: "h", port: 25, tls: true })).toEqual(["config.tls"]);
    expect(fields({ host: "h", port: 25 })).toEqual([]);
  });
});
