/**
 * The ids a mail's In-Reply-To and References name (bare, without `<>`), as
 * keys of the messages they may answer: a provider's id of a message (kept
 * bare or bracketed, as the provider wrote it), and ours where the id is a
 * Message-ID we gave (`<our id@sender's domain>`).
 */
export function repliedToKeys(references: string[]): { providerIds: string[]; ownIds: string[] } {
  const bare = references.map((r) => r.trim().replace(/^<|>$/g, "")).filter(Boolean);
  return {
    providerIds: [...bare, ...bare.map((r) => `<${r}>`)],
    ownIds: bare.flatMap((r) => {
      const at = r.lastIndexOf("@");
      return at > 0 ? [r.slice(0, at)] : [];
    }),
  };
}
