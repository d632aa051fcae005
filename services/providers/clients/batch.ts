/**
 * Batched sends, pure: one request carries a shared body with holes and,
 * per recipient, what fills them. The shared body is the template's source
 * cut at every place a message may differ from another: each Liquid output,
 * each link (tracked links carry the message id), the top of the body (the
 * preheader) and its end (the open pixel). What fills a recipient's holes is
 * read back from that recipient's own rendered message, so filling them
 * gives exactly what was rendered and recorded: the two cannot disagree. A
 * message that does not fit the cuts (or a source with Liquid tags, whose
 * output may have any shape) is sent on its own.
 */

/** What names a hole in a batched body (`%%cms-<part><n>%%`): a source or value holding it cannot be batched. */
export const BATCH_KEY = "%%cms-";

/** The name of hole `i` of a part (`h` html, `t` text). */
export const holeKey = (part: string) => (i: number) => `${BATCH_KEY}${part}${i}%%`;

const OUTPUT = /\{\{(?!-)[\s\S]*?(?<!-)\}\}/g;
const HREF_VALUE = /(\bhref\s*=\s*)(["'])[^"']*\2/gi;
const HOLE = "\u0000";

/** The fixed parts of a source, between its holes; null when it cannot be cut (Liquid tags, whitespace control). */
export function skeletonOf(source: string, html: boolean): string[] | null {
  if (/\{%|\{\{-|-\}\}/.test(source) || source.includes(HOLE)) return null;
  let cut = source;
  if (html) {
    cut = cut.replace(HREF_VALUE, (_, head: string, quote: string) => `${head}${quote}${HOLE}${quote}`);
    cut = /<body[^>]*>/i.test(cut) ? cut.replace(/<body[^>]*>/i, (tag) => `${tag}${HOLE}`) : `${HOLE}${cut}`;
    cut = /<\/body>/i.test(cut) ? cut.replace(/<\/body>/i, `${HOLE}</body>`) : `${cut}${HOLE}`;
  }
  cut = cut.replace(OUTPUT, HOLE);
  return cut.split(HOLE);
}

/** What fills each hole of `literals` to give `rendered`; null when `rendered` does not have those fixed parts. */
export function holesOf(rendered: string, literals: string[]): string[] | null {
  const last = literals.length - 1;
  if (!rendered.startsWith(literals[0])) return null;
  const holes: string[] = [];
  let at = literals[0].length;
  for (let i = 1; i <= last; i++) {
    const next = i === last ? rendered.length - literals[i].length : rendered.indexOf(literals[i], at);
    if (next < at || (i === last && !rendered.endsWith(literals[i]))) return null;
    holes.push(rendered.slice(at, next));
    at = next + literals[i].length;
  }
  return holes;
}

/** The shared body with each hole named by `key(i)`. */
export const joinWithKeys = (literals: string[], key: (i: number) => string): string =>
  literals.reduce((body, literal, i) => (i === 0 ? literal : `${body}${key(i - 1)}${literal}`), "");
