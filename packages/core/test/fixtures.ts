/** Core's own test fixtures; the did:key agent and signed message are `@agentmsg/conformance`'s. */
import { createMessage } from '../src/create-message.js'
import type { UnsignedMessage } from '../src/types.js'

/** A message of about `size` bytes of text from `from` to `to`. */
export function sampleMessage(
  from: string,
  to: string,
  size = 200,
  date = Date.now(),
): UnsignedMessage {
  return createMessage({
    from,
    to,
    conversationId: 'c-7f3a',
    sequence: 0,
    phase: 'request',
    date,
    ttlSeconds: 86_400,
    parts: [
      { type: 'text', text: 'héllo wörld ✓ '.repeat(Math.max(1, Math.floor(size / 16))) },
      { type: 'data', data: { n: 1.5, list: [1, 2, 3], nested: { ok: true, none: null } } },
    ],
  })
}
