/**
 * What the page says about a failure: the error's PROFILE §6 code in a short sentence (the raw
 * message stays in the tooltip and the console), and the one-line legend of a message's facts.
 */

const WORDS: Record<string, string> = {
  unavailable: 'The relay does not answer right now: retrying by itself.',
  rate_limited: 'The relay asks to slow down: retrying shortly.',
  internal_error: 'The relay failed on its side: retrying.',
  unauthorized: 'The relay did not accept this agent’s signature.',
  forbidden: 'The relay refused: not allowed.',
  not_found: 'The relay does not know this mailbox or topic.',
  payload_too_large: 'Too large for the relay.',
  invalid_signature: 'A message’s signature did not verify: it was refused.',
  unknown_sender: 'A sender’s key could not be found: its message was refused.',
  key_revoked: 'A message signed with a revoked key was refused.',
  insufficient_auth_level:
    'A message signed less surely than this conversation requires was refused.',
  stale_message: 'A message too old (or from a clock far off) was refused.',
  invalid_format: 'A malformed message was refused.',
}

/** `e` in words: its code's sentence, else its own message. */
export function inWords(e: unknown): string {
  const code = (e as { code?: unknown } | undefined)?.code
  const words = typeof code === 'string' ? WORDS[code] : undefined
  return words ?? (e instanceof Error ? e.message : String(e))
}
