/**
 * Webhook push (PROFILE §9): the URL is checked by the outbound address policy (on the address
 * actually connected to) and verified by a `webhook_verify` challenge before use; then every
 * message of the subscriber's mailbox is POSTed as §6 delivery, retries included, and deleted
 * from the mailbox once the target answered 2xx.
 */

import type { DeliveryTarget, Message } from '@agentmsg/core'
import { AgentMsgError, isAgentMsgError } from '@agentmsg/core'
import { base64urlEncode, randomBytes } from '@agentmsg/core/encoding'
import { invalidFormat } from '@agentmsg/core/http'
import type { HttpsSender } from '@agentmsg/transport-https'
import { readLimited } from '@agentmsg/transport-https/http-kit'
import type { MailboxEntry } from '../store/types.js'
import type { FeedSink } from './types.js'

/** Largest webhook verification reply read (PROFILE §4: 64 KiB for a reply). */
const MAX_REPLY_BYTES = 64 * 1024

/** Check the form of a webhook URL: https, no userinfo, no fragment. Returns it serialised. */
export function checkWebhookUrl(value: unknown): string {
  if (typeof value !== 'string') throw invalidFormat('must be a string', 'push.url')
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw invalidFormat('is not a URL', 'push.url')
  }
  if (url.protocol !== 'https:') throw invalidFormat('must be an https URL', 'push.url')
  if (url.username !== '' || url.password !== '') {
    throw invalidFormat('must not contain userinfo', 'push.url')
  }
  if (url.hash !== '' || url.href.includes('#')) {
    throw invalidFormat('must not contain a fragment', 'push.url')
  }
  return url.href
}

/**
 * POST `{type:"webhook_verify",challenge}` and require 200 with the challenge echoed.
 *
 * @throws AgentMsgError `invalid_format` when the address is refused by the policy, the target
 *   is unreachable or answers anything else (the subscription is then not made).
 */
export async function verifyWebhook(
  fetchFn: typeof fetch,
  url: string,
  timeoutMs: number,
): Promise<void> {
  const challenge = base64urlEncode(randomBytes(24))
  let response: Response
  try {
    response = await fetchFn(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ type: 'webhook_verify', challenge }),
      signal: AbortSignal.timeout(timeoutMs),
      redirect: 'manual',
    })
  } catch (error) {
    // PROFILE §4: a failed outbound request is reported as failed, never with the socket, TLS
    // or address detail (which would make the relay a port scanner for its subscribers).
    throw new AgentMsgError('invalid_format', 'push.url: webhook verification failed', {
      cause: error,
      field: 'push.url',
    })
  }
  let echoed: unknown
  try {
    // A reply is read with the 64 KiB cap of PROFILE §4, never whole.
    const bytes = await readLimited(response.body, MAX_REPLY_BYTES)
    if (response.status === 200 && bytes !== undefined) {
      echoed = (JSON.parse(new TextDecoder().decode(bytes)) as { challenge?: unknown }).challenge
    }
  } catch {
    echoed = undefined
  }
  if (response.status !== 200 || echoed !== challenge) {
    throw invalidFormat(
      'webhook verification failed: expected 200 with the challenge echoed',
      'push.url',
    )
  }
}

/** A feed sink that delivers each entry to a webhook and acknowledges it on success. */
export class WebhookSink implements FeedSink {
  readonly #sender: HttpsSender
  readonly #target: DeliveryTarget
  readonly #ack: (entry: MailboxEntry) => Promise<unknown>
  readonly #maxInFlight: number
  readonly #onError: (error: unknown) => void
  readonly #onDelivered: (() => void) | undefined
  #inFlight = 0
  #closed = false
  #waiters: Array<(ok: boolean) => void> = []

  constructor(options: {
    sender: HttpsSender
    /** The mailbox's owner, to whose webhook its messages go. */
    agent: string
    url: string
    ack: (entry: MailboxEntry) => Promise<unknown>
    maxInFlight: number
    onError: (error: unknown) => void
    /** A message was taken by the webhook (2xx), before it is acknowledged (metrics). */
    onDelivered?: () => void
  }) {
    this.#sender = options.sender
    this.#target = { kind: 'inbox', agent: options.agent, urls: [options.url] }
    this.#ack = options.ack
    this.#maxInFlight = options.maxInFlight
    this.#onError = options.onError
    this.#onDelivered = options.onDelivered
  }

  send(entry: MailboxEntry): void {
    if (this.#closed) return
    let message: Message
    try {
      message = JSON.parse(entry.json) as Message
    } catch (error) {
      this.#onError(error)
      return
    }
    this.#inFlight++
    this.#sender
      .send(message, this.#target)
      .then(
        () => {
          this.#onDelivered?.()
          return this.#ack(entry)
        },
        (error: unknown) => {
          // Refused (4xx) or undeliverable after 24 h: it stays in the mailbox for retrieval.
          if (!isAgentMsgError(error)) this.#onError(error)
        },
      )
      .catch(this.#onError)
      .finally(() => {
        this.#inFlight--
        const w = this.#waiters.shift()
        w?.(!this.#closed)
      })
  }

  ready(): Promise<boolean> {
    if (this.#closed) return Promise.resolve(false)
    if (this.#inFlight < this.#maxInFlight) return Promise.resolve(true)
    return new Promise((resolve) => this.#waiters.push(resolve))
  }

  close(): void {
    this.#closed = true
    const waiters = this.#waiters
    this.#waiters = []
    for (const w of waiters) w(false)
  }
}
