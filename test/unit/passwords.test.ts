import { burnPasswordCheck, hashPassword, verifyPassword } from "../../lib/passwords";

describe("passwords (scrypt)", () => {
  test("the stored form names the algorithm and its parameters, with a random salt", async () => {
    const a = await hashPassword("correct horse battery", 10);
    const b = await hashPassword("correct horse battery", 10);
    expect(a).toMatch(/^scrypt\$10\$8\$1\$[A-Za-z0-9+/=]{24}\$[A-Za-z0-9+/=]{44}$/);
    expect(a).not.toBe(b);
  });

  test("the right password verifies, a wrong one does not", async () => {
    const stored = await hashPassword("correct horse battery", 10);
    expect(await verifyPassword("correct horse battery", stored)).toBe(true);
    expect(await verifyPassword("correct horse batterY", stored)).toBe(false);
    expect(await verifyPassword("", stored)).toBe(false);
  });

  test("non-ASCII passwords round-trip", async () => {
    const stored = await hashPassword("pässwörd-密码-🔑", 10);
    expect(await verifyPassword("pässwörd-密码-🔑", stored)).toBe(true);
    expect(await verifyPassword("passwort-密码-🔑", stored)).toBe(false);
  });

  test("the cost is read back from the stored value", async () => {
    const stored = await hashPassword("secret-password", 11);
    expect(stored.split("$")[1]).toBe("11");
    expect(await verifyPassword("secret-password", stored)).toBe(true);
  });

  test("the default cost comes from the configuration (PASSWORD_HASH_COST)", async () => {
    expect((await hashPassword("secret-password")).split("$")[1]).toBe(process.env.PASSWORD_HASH_COST);
  });

  test("a stored value of another scheme or a truncated one never verifies", async () => {
    const stored = await hashPassword("secret-password", 10);
    expect(await verifyPassword("secret-password", stored.replace(/^scrypt/, "bcrypt"))).toBe(false);
    expect(await verifyPassword("secret-password", stored.split("$").slice(0, 5).join("$"))).toBe(false);
    expect(await verifyPassword("secret-password", "")).toBe(false);
    expect(await verifyPassword("secret-password", "$2b$10$abcdefghijklmnopqrstuu")).toBe(false);
  });

  test("burnPasswordCheck spends a hash computation and resolves", async () => {
    await expect(burnPasswordCheck("anything")).resolves.toBeUndefined();
  });
});
