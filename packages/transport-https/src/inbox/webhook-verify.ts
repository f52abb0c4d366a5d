/**
 * A relay verifies a webhook URL before pushing to it (PROFILE §9): it POSTs
 * `{type:"webhook_verify",challenge}` and expects 200 with `{challenge}` echoed. An inbox answers
 * it, so an agent can have a relay push its mailbox or topics to its own inbox. Echoing tells
 * the caller nothing the inbox's 4xx answers do not: that an inbox is there.
 */
import { utf8Decode } from '@agentmsg/core/http'

/** A verification body is small; messages are never parsed twice for it. */
const MAX_VERIFY_BYTES = 512
const MAX_CHALLENGE_CHARS = 256

/** The challenge of a `webhook_verify` body, or undefined for anything else. */
export function webhookChallenge(body: Uint8Array): string | undefined {
  if (body.byteLength > MAX_VERIFY_BYTES) return undefined
  let value: unknown
  try {
    value = JSON.parse(utf8Decode(body))
  } catch {
    return undefined
  }
  if (typeof value !== 'object' || value === null) return undefined
  const { type, challenge } = value as Record<string, unknown>
  if (type !== 'webhook_verify' || typeof challenge !== 'string') return undefined
  return challenge.length <= MAX_CHALLENGE_CHARS ? challenge : undefined
}
