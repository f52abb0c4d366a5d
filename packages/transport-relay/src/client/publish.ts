/** Publishing (PROFILE §9): no agent auth, the message's own signature is what relays check. */
import type { AbortOptions, Message } from '@agentmsg/core'
import {
  AgentMsgError,
  assertRelayUrl,
  httpRequest,
  invalidFormat,
  isAgentMsgError,
} from '@agentmsg/core/http'
import { readReply, relayEndpoint } from './http.js'
import type { RelayClientOptions } from './relay-core.js'

/** Options of {@link publishToRelay}. */
export interface PublishOptions
  extends AbortOptions,
    Pick<RelayClientOptions, 'fetch' | 'timeoutMs'> {
  /** The recipient's `relay.preference`; `any` starts at a random relay, spreading senders. @default 'ordered' */
  preference?: 'any' | 'ordered' | undefined
  /** Uniform numbers in [0, 1) for the `any` start, for tests. @default Math.random */
  random?: (() => number) | undefined
}

/**
 * A refusal by the relay: it answered, and no retry changes that answer. It ends the delivery;
 * anything else (no answer, 5xx, 429, a refused address, a bad URL) moves on to the next relay.
 */
function isRelayRefusal(error: unknown): boolean {
  return isAgentMsgError(error) && error.peerStatus !== undefined && !error.shouldRetry()
}

async function publishOne(message: Message, body: string, relayUrl: string, o: PublishOptions) {
  const url = relayEndpoint(assertRelayUrl(relayUrl, 'relayUrl'), '/relay/publish')
  const headers = { 'Content-Type': 'application/json', Accept: 'application/json' }
  const what = `publish to ${relayUrl}`
  const init = { fetch: o.fetch, method: 'POST', headers, body, timeoutMs: o.timeoutMs, what }
  // The 202's body only echoes the id: one that is not JSON still means accepted.
  const reply = await httpRequest(url, { ...init, signal: o.signal }, (res, s) =>
    readReply(res, what, s).catch(() => ({}) as Record<string, unknown>),
  )
  return typeof reply.message_id === 'string' ? reply.message_id : message.message_id
}

/**
 * Publish a signed message to the first of `relays` that answers 202 (PROFILE §9 client
 * failover). A relay that cannot be reached, answers 5xx or 429, or whose address is refused is
 * skipped at once (waiting for `Retry-After` is the caller's); a refusal by a relay stops.
 *
 * @throws AgentMsgError — an unsigned or traced message; a relay's refusal; the one relay's
 *   error; or, when several failed, `unavailable` (each error in an `AggregateError` `cause`).
 * @example const { relayUrl } = await publishToRelay(signed, [relayA, relayB], { fetch })
 */
export async function publishToRelay(
  message: Message,
  relays: string | readonly string[],
  options: PublishOptions = {},
): Promise<{
  messageId: string
  relayUrl: string
  failed: { relayUrl: string; error: unknown }[]
}> {
  const unique = [...new Set(typeof relays === 'string' ? [relays] : relays)]
  if (unique.length === 0) throw invalidFormat('at least one relay URL is needed', 'relays')
  // What every relay refuses (PROFILE §9), refused here without a request.
  if (!message.security?.signatures?.length) {
    throw new AgentMsgError('invalid_signature', 'the message is unsigned; sign it first')
  }
  if (message.trace?.received.length) {
    throw invalidFormat(
      'must be empty in a publish (no relay-to-relay forwarding)',
      'trace.received',
    )
  }
  let order = unique
  if (options.preference === 'any') {
    const start = Math.floor((options.random ?? Math.random)() * unique.length) % unique.length
    order = [...unique.slice(start), ...unique.slice(0, start)]
  }
  const body = JSON.stringify(message)
  const failed: { relayUrl: string; error: unknown }[] = []
  for (const relayUrl of order) {
    try {
      return { messageId: await publishOne(message, body, relayUrl, options), relayUrl, failed }
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason ?? error
      if (isRelayRefusal(error)) throw error
      failed.push({ relayUrl, error })
    }
  }
  if (failed.length === 1) throw failed[0]!.error
  const waits = failed.map((f) => (isAgentMsgError(f.error) ? f.error.retryAfter : undefined))
  const retryAfter = waits.every((w) => w !== undefined) ? Math.min(...waits) : undefined
  const each = failed.map((f) => `${f.relayUrl}: ${(f.error as Error)?.message ?? f.error}`)
  throw new AgentMsgError(
    'unavailable',
    `no relay accepted ${message.message_id}: ${each.join('; ')}`,
    {
      cause: new AggregateError(
        failed.map((f) => f.error),
        'every relay failed',
      ),
      ...(retryAfter !== undefined ? { retryAfter } : {}),
    },
  )
}
