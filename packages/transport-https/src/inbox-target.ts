/** What the sender accepts before storing anything: an https inbox target, a message in size. */
import { AgentMsgError, canonicalize, type DeliveryTarget, type Message } from '@agentmsg/core'
import { utf8Encode } from '@agentmsg/core/encoding'

/** Extra room for `trace` on top of the message limit, as the inbox allows (PROFILE §6). */
const TRACE_ALLOWANCE = 65_536

/**
 * The inbox URL of a target (its one URL); only `https:` inbox targets are accepted, also in
 * development (PROFILE §6 TLS).
 */
export function checkInboxTarget(target: DeliveryTarget): string {
  if (target?.kind !== 'inbox') {
    throw new AgentMsgError(
      'invalid_format',
      `the https sender delivers to inbox targets, not ${JSON.stringify((target as { kind?: unknown })?.kind)}`,
      { field: 'target.kind' },
    )
  }
  const urls: readonly unknown[] = Array.isArray(target.urls) ? target.urls : []
  if (urls.length !== 1 || typeof urls[0] !== 'string') {
    throw new AgentMsgError('invalid_format', 'an inbox target has exactly one URL', {
      field: 'target.urls',
    })
  }
  const text = urls[0]
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw new AgentMsgError('invalid_format', `inbox URL ${JSON.stringify(text)} is not a URL`, {
      field: 'target.urls',
    })
  }
  if (url.protocol !== 'https:') {
    throw new AgentMsgError(
      'invalid_format',
      `inbox URL ${text} is ${url.protocol}, but only https: is used, also in development: ` +
        'use a development certificate and trust it as a custom CA (PROFILE §6)',
      { field: 'target.urls' },
    )
  }
  if (url.username || url.password) {
    throw new AgentMsgError('invalid_format', 'inbox URLs must not carry credentials', {
      field: 'target.urls',
    })
  }
  return text
}

/**
 * The wire body of a message; throws `payload_too_large` over the limits of PROFILE §6
 * (`JCS(message without trace)` up to `maxBytes`, the whole body up to 64 KiB more).
 */
export function encodeForInbox(message: Message, maxBytes: number): string {
  const { trace: _trace, ...rest } = message
  const size = utf8Encode(canonicalize(rest)).length
  if (size > maxBytes) {
    throw new AgentMsgError(
      'payload_too_large',
      `message ${message.message_id} is ${size} bytes (JCS without trace); senders refuse more than ${maxBytes} (PROFILE §6)`,
    )
  }
  const body = canonicalize(message)
  const total = utf8Encode(body).length
  if (total > maxBytes + TRACE_ALLOWANCE) {
    throw new AgentMsgError(
      'payload_too_large',
      `message ${message.message_id} is ${total} bytes with its trace; the inbox takes at most ${maxBytes + TRACE_ALLOWANCE}`,
    )
  }
  return body
}
