/**
 * The receive pipeline's side of opening (PROFILE §8), loaded by `import()` only when a sealed
 * body arrives, so that everything here, the key lookup included, stays out of bundles that
 * never see one.
 */
import { invalidFormat } from '../errors.js'
import type { ReceiveOpener } from '../receive/types.js'
import type { Message } from '../types.js'
import { openSealedBody } from './body.js'

/**
 * `message` with its body opened for `opener.agent`, with the seed of the key its part names.
 * A part for another recipient is skipped; a message with none for us is refused.
 */
export function openForReceiver(message: Message, opener: ReceiveOpener): Message {
  const parts: unknown[] = message.body.parts
  const mine = parts.find(
    (p) => (p as { recipient?: unknown } | null)?.recipient === opener.agent,
  ) as { key_id?: unknown } | undefined
  if (!mine) throw invalidFormat(`no sealed part for ${opener.agent}`, 'body.parts')
  const keyId = typeof mine.key_id === 'string' ? mine.key_id : ''
  const seed = opener.ed25519Seed(keyId)
  if (!seed) throw invalidFormat(`${keyId} is not a key of ${opener.agent}`, 'body.parts')
  return { ...message, body: openSealedBody(message, { agent: opener.agent, ed25519Seed: seed }) }
}
