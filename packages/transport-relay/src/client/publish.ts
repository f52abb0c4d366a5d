/**
 * Publishing (PROFILE §9 `POST /relay/publish`) and client failover across a recipient's relays.
 * A publish carries no agent auth: the message's own signature is what the relay checks.
 */
import {
  type AbortOptions,
  AgentMsgError,
  isAgentMsgError,
  type Message,
  validateMessage,
} from '@agentmsg/core'
import { canonicalizeToBytes } from '@agentmsg/core/encoding'
import { assertRelayUrl, invalidFormat } from '@agentmsg/core/http'
import type { RelayPreference } from '@agentmsg/core/message'
import { DEFAULT_TIMEOUT_MS, exchange, readJson, relayEndpoint } from './http.js'

/** The largest message a sender sends: `JCS(message without trace)` (PROFILE §6). */
export const MAX_PUBLISH_BYTES = 1_048_576

/** Options for {@link publishToRelay}. */
export interface PublishOptions extends AbortOptions {
  /**
   * The `fetch` to use. On Node pass `createNodeFetch({ ca })` from
   * `@agentmsg/transport-https/node`, which enforces https and the address policy.
   * @default globalThis.fetch
   */
  fetch?: typeof fetch
  /** The request is answered and read within this, in ms (`0`: no limit). @default 30_000 */
  timeoutMs?: number
}

/** The relay's acceptance of a publish. */
export interface RelayPublishResult {
  /** The accepted message id, as the relay echoed it. */
  messageId: string
}

/** Refuse locally what every relay would refuse: malformed, unsigned, oversized, already traced. */
function checkPublishable(message: Message): void {
  const { message: m } = validateMessage(message)
  if (!m.security?.signatures?.length) {
    throw new AgentMsgError(
      'invalid_signature',
      'the message is unsigned; sign it before publishing',
    )
  }
  if (m.trace !== undefined && m.trace.received.length > 0) {
    throw invalidFormat(
      'must be empty in a publish (no relay-to-relay forwarding)',
      'trace.received',
    )
  }
  const { trace: _trace, ...signed } = m
  if (canonicalizeToBytes(signed).length > MAX_PUBLISH_BYTES) {
    throw new AgentMsgError('payload_too_large', `the message is over ${MAX_PUBLISH_BYTES} bytes`)
  }
}

/**
 * Publish a signed message to one relay. Resolves when the relay answered 202 (it has stored
 * the message durably).
 *
 * @throws AgentMsgError — the relay's `code`, status and `retryAfter` for an error answer;
 *   `unavailable` (with the network error as `cause`) when the relay could not be reached;
 *   `invalid_format` / `invalid_signature` / `payload_too_large` before sending, for a message
 *   no relay would take. An abort rejects with the signal's reason.
 *
 * @example
 * const { messageId } = await publishToRelay(signed, 'https://relay.example', { fetch })
 */
export async function publishToRelay(
  message: Message,
  relayUrl: string,
  options: PublishOptions = {},
): Promise<RelayPublishResult> {
  assertRelayUrl(relayUrl, 'relayUrl')
  checkPublishable(message)
  const fetchFn = options.fetch ?? globalThis.fetch
  const what = `publish to ${relayUrl}`
  const body = (await exchange({
    fetch: fetchFn,
    url: relayEndpoint(relayUrl, '/relay/publish'),
    init: {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
      body: JSON.stringify(message),
    },
    what,
    timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    signal: options.signal,
    // The 202's body only echoes the id: a reply that is not JSON still means accepted.
    read: (res, signal) => readJson(res, what, signal).catch(() => ({})),
  })) as { message_id?: unknown }
  const messageId = typeof body.message_id === 'string' ? body.message_id : message.message_id
  return { messageId }
}

/** Options for {@link publishWithFailover}. */
export interface FailoverOptions extends PublishOptions {
  /**
   * How to order the relays (a recipient's `relay.preference`). `ordered`: in the order given.
   * `any`: start at a random relay and go round from there, so senders spread over the
   * recipient's relays.
   * @default 'ordered'
   */
  preference?: RelayPreference
  /** Uniform numbers in [0, 1) for the `any` start, for tests. @default Math.random */
  random?: () => number
}

/** One relay that did not accept the message. */
export interface FailoverAttempt {
  relayUrl: string
  error: unknown
}

/** Which relay accepted the message, and the ones that failed before it. */
export interface FailoverResult extends RelayPublishResult {
  relayUrl: string
  /** The relays tried before, in order, with their errors. */
  failed: FailoverAttempt[]
}

/** Move on from this relay to the next? (PROFILE §9 client failover) */
function tryNext(error: unknown): boolean {
  if (!isAgentMsgError(error)) return true
  // 5xx answers and unreachable relays (network errors are `unavailable`, 503), and 429.
  if (error.status === 429 || error.status >= 500) return true
  // An address-policy refusal (transport-https `AddressRefusedError`, code `forbidden`, with the
  // refused `address`) is about reaching this relay, not about the message.
  return typeof (error as { address?: unknown }).address === 'string'
}

/**
 * Publish to the first of a recipient's relays that accepts (PROFILE §9 client failover).
 *
 * - A network error, a timeout, a refused address or a 5xx answer: move to the next relay.
 * - 429 `rate_limited`: move to the next relay at once rather than wait — the limit is that
 *   relay's, another may take the message now. Waiting for `Retry-After` is left to the caller's
 *   retry loop: when every relay refused with 429/503 and `Retry-After`, the error thrown carries
 *   the smallest as `retryAfter`.
 * - Any other 4xx: stop and throw that relay's error (the message itself is refused, e.g.
 *   `invalid_format`, `invalid_signature`, `not_found` for a recipient without a mailbox).
 *
 * @returns the relay that accepted, the message id, and the failed attempts before it.
 * @throws AgentMsgError — a relay's 4xx (not 429) error; or, when no relay accepted,
 *   `unavailable` with `cause` an `AggregateError` of every attempt's error.
 *
 * @example
 * const { relayUrl } = await publishWithFailover(signed, identity.relay.urls, {
 *   preference: identity.relay.preference,
 *   fetch,
 * })
 */
export async function publishWithFailover(
  message: Message,
  relays: readonly string[],
  options: FailoverOptions = {},
): Promise<FailoverResult> {
  const unique = [...new Set(relays)]
  unique.forEach((url, i) => assertRelayUrl(url, `relays[${i}]`))
  if (unique.length === 0) throw invalidFormat('at least one relay URL is needed', 'relays')
  checkPublishable(message)

  let order = unique
  if ((options.preference ?? 'ordered') === 'any') {
    const start = Math.floor((options.random ?? Math.random)() * unique.length) % unique.length
    order = [...unique.slice(start), ...unique.slice(0, start)]
  }

  const failed: FailoverAttempt[] = []
  for (const relayUrl of order) {
    try {
      const result = await publishToRelay(message, relayUrl, options)
      return { ...result, relayUrl, failed }
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason ?? error
      if (!tryNext(error)) throw error
      failed.push({ relayUrl, error })
    }
  }
  const waits = failed.map((f) => (isAgentMsgError(f.error) ? f.error.retryAfter : undefined))
  const retryAfter = waits.every((w) => w !== undefined) ? Math.min(...waits) : undefined
  throw new AgentMsgError(
    'unavailable',
    `no relay accepted message ${message.message_id}: ${failed
      .map((f) => `${f.relayUrl}: ${f.error instanceof Error ? f.error.message : String(f.error)}`)
      .join('; ')}`,
    {
      cause: new AggregateError(
        failed.map((f) => f.error),
        'every relay failed',
      ),
      ...(retryAfter !== undefined ? { retryAfter } : {}),
    },
  )
}
