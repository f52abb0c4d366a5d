/**
 * The I-JSON number rule shared by both paths of the strict parser. Its own file: the fast path
 * (./fast-path.ts) needs it without loading the exact parser's scanner (issue 12).
 */

/**
 * True when a parsed number is one PROFILE §1 lets through: finite, and not an integer beyond
 * ±(2^53−1). Every double of magnitude 2^53 or more is an integer, so this is a magnitude test;
 * fractions such as 1.5 or 0.1 are fine.
 */
export function isIJsonSafeNumber(n: number): boolean {
  return Math.abs(n) <= Number.MAX_SAFE_INTEGER
}
