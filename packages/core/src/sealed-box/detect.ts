/**
 * Whether a body is sealed (PROFILE §8), in a module of its own: the receive pipeline asks this
 * of every message and must not pull in the sealed-box cryptography to do so (it imports
 * `body.ts` lazily, only when a sealed body arrives).
 */

/** Whether `body` is sealed: decided from `body.parts` alone (PROFILE §8), never `security`. */
export function isSealedBody(body: { parts?: unknown } | undefined): boolean {
  const parts = body?.parts
  return (
    Array.isArray(parts) &&
    parts.some(
      (p) => typeof p === 'object' && p !== null && (p as { type?: unknown }).type === 'sealed',
    )
  )
}
