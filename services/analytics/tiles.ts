/**
 * Rollups are kept at three tiers of UTC buckets (migration 0083): days (2),
 * hours (1) and 15 minutes (0). A span of time whose ends fall on quarter
 * hours is covered exactly by the fewest of them: 15-minute buckets up to the
 * first hour, hours up to the first midnight (UTC), whole days, then hours and
 * quarters again at the end. A Berlin day (23:00 to 23:00 UTC) is 24 hours; a
 * 90-day range in one piece is 89 days and 24 hours; in Kolkata (+05:30) a day
 * also takes two quarters at each end.
 */

export interface Tile {
  tier: number;
  /** First instant, inclusive (ms since the epoch). */
  lo: number;
  /** End, exclusive. */
  hi: number;
}

const TIERS = [
  { tier: 2, ms: 86_400_000 },
  { tier: 1, ms: 3_600_000 },
  { tier: 0, ms: 900_000 },
] as const;

/** Tiles covering `spans` (each `[lo, hi)` on quarter hours), neighbours of one tier merged into one tile. */
export function tilesOf(spans: Array<[number, number]>): Tile[] {
  const tiles: Tile[] = [];
  const push = (tier: number, lo: number, hi: number) => {
    const last = tiles[tiles.length - 1];
    if (last && last.tier === tier && last.hi === lo) last.hi = hi;
    else tiles.push({ tier, lo, hi });
  };
  for (const [lo, hi] of spans) {
    if (lo % TIERS[2].ms !== 0 || hi % TIERS[2].ms !== 0) throw new Error("span off the quarter hour");
    let cursor = lo;
    while (cursor < hi) {
      const i = TIERS.findIndex(({ ms }) => cursor % ms === 0 && cursor + ms <= hi);
      const { tier, ms } = TIERS[i];
      // A smaller tier runs only up to the next edge of the bigger one, where bigger tiles may take over.
      const bigger = i > 0 ? Math.floor(cursor / TIERS[i - 1].ms + 1) * TIERS[i - 1].ms : hi;
      const stop = cursor + Math.floor((Math.min(hi, bigger) - cursor) / ms) * ms;
      push(tier, cursor, stop);
      cursor = stop;
    }
  }
  return tiles;
}
