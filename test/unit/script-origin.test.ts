import { config } from "../../lib/config";
import { landingPageToken, scriptOriginAllowed } from "../../services/content/script-origin";
import { signLinkToken } from "../../services/messages/links";
import { asWorkspaceId } from "../../lib/tenancy";

describe("the website script's origins", () => {
  const site = { workspaceId: asWorkspaceId("w1"), allowedOrigins: ["https://www.acme.test"] };
  const allowed = (origin: string, pageToken?: string) => scriptOriginAllowed(origin, pageToken, site);

  it("answers the service itself and the workspace's allowed origins, no other", () => {
    expect(allowed(config().publicUrl)).toBe(true);
    expect(allowed("https://www.acme.test")).toBe(true);
    expect(allowed("https://evil.test", landingPageToken(asWorkspaceId("w1"), "lp1"))).toBe(false);
  });

  it("answers Origin null only with the token of one of the workspace's landing pages", () => {
    expect(allowed("null", landingPageToken(asWorkspaceId("w1"), "lp1"))).toBe(true);
    expect(allowed("null")).toBe(false);
    expect(allowed("null", "not a token")).toBe(false);
    expect(allowed("null", landingPageToken(asWorkspaceId("w2"), "lp9"))).toBe(false);
    expect(allowed("null", signLinkToken({ typ: "visitor", ws: asWorkspaceId("w1"), sub: "c1" }))).toBe(
      false,
    );
  });
});
