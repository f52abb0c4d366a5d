/**
 * Webhook push (PROFILE §9): a URL verified by a `webhook_verify` challenge, under the address
 * policy; each message POSTed as §6 delivery with retries, deleted once taken (2xx), else left
 * in the mailbox for retrieval.
 */
import { isAgentMsgError, PROFILE } from '@agentmsg/core'
import {
  Backoff,
  base64urlEncode,
  httpRequest,
  invalidFormat,
  randomBytes,
  readJson,
  sleep,
  type TraceSpan,
  traced,
} from '@agentmsg/core/http'
import { discardBody } from '@agentmsg/core/server'
import type { MailboxEntry } from '../store/types.js'
import type { FeedSink } from './feed.js'

/** Webhook push settings. */
export interface RelayWebhookOptions {
  /** Timeout of the `webhook_verify` round trip, and when a failed one is answered. @default 10_000 */
  verifyTimeoutMs?: number
  /** Timeout of one delivery attempt. @default PROFILE.attemptTimeoutMs (30 s) */
  attemptTimeoutMs?: number
  /** Retries stop this long after the first attempt. @default PROFILE.retryDeadlineMs (24 h) */
  deadlineMs?: number
  /** Jitter source of the retry schedule, in [0, 1). @default Math.random */
  random?: () => number
  /** Deliveries in flight per webhook subscription. @default 64 */
  maxInFlight?: number
}

type HttpRequestOptions = Parameters<typeof httpRequest>[1]
const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/json' }

/** The form of a webhook URL: https, no userinfo, no fragment. Returns it serialised. */
export function checkWebhookUrl(value: unknown): string {
  const bad = (why: string) => invalidFormat(why, 'push.url')
  if (typeof value !== 'string') throw bad('must be a string')
  if (!URL.canParse(value)) throw bad('is not a URL')
  const url = new URL(value)
  if (url.protocol !== 'https:') throw bad('must be an https URL')
  if (url.username !== '' || url.password !== '') throw bad('must not contain userinfo')
  if (url.hash !== '' || url.href.includes('#')) throw bad('must not contain a fragment')
  return url.href
}

/**
 * POST `{type:"webhook_verify",challenge}` and require 200 with the challenge echoed. Every
 * failure (no connection, TLS, another status, a wrong answer, the timeout) is one answer, given
 * once `timeoutMs` has passed: neither its words nor its time tell a closed port from a service,
 * so the relay is no port scanner for its subscribers (PROFILE §4).
 */
export async function verifyWebhook(fetchFn: typeof fetch, url: string, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs
  const challenge = base64urlEncode(randomBytes(24))
  const body = JSON.stringify({ type: 'webhook_verify', challenge })
  const options = { fetch: fetchFn, method: 'POST', headers: JSON_HEADERS, body, timeoutMs }
  const echoed = await httpRequest(url, options, async (response, signal) => {
    if (response.status !== 200) return discardBody(response.body)
    const answer = await readJson(response, signal).catch(() => undefined)
    return (answer as { challenge?: unknown } | undefined)?.challenge
  }).catch(() => undefined)
  if (echoed === challenge) return
  await sleep(deadline - Date.now())
  throw invalidFormat('webhook verification failed', 'push.url')
}

/** One push attempt, a trace of its own: the feed running it serves a mailbox, not a publish. */
async function push(span: TraceSpan | undefined, url: string, request: HttpRequestOptions) {
  span?.setAttributes({ 'agentmsg.relay.mode': 'webhook' })
  await httpRequest(url, request, async (response) => discardBody(response.body))
}

/** What a {@link WebhookSink} delivers to and tells. */
export interface WebhookSinkOptions {
  url: string
  fetch: typeof fetch
  options: RelayWebhookOptions
  ack: (entry: MailboxEntry) => Promise<unknown>
  onError: (error: unknown) => void
  /** A message was taken (2xx), before it is acknowledged (metrics). */
  onDelivered: () => void
}

/** A feed sink that delivers each entry to a webhook and acknowledges it once taken. */
export class WebhookSink implements FeedSink {
  readonly #stop = new AbortController()
  #inFlight = 0
  #waiters: Array<(ok: boolean) => void> = []

  constructor(readonly o: WebhookSinkOptions) {}

  send(entry: MailboxEntry): void {
    if (this.#stop.signal.aborted) return
    this.#inFlight++
    this.#deliver(entry)
      .then((taken) => {
        if (!taken) return
        this.o.onDelivered()
        return this.o.ack(entry)
      })
      .catch(this.o.onError)
      .finally(() => {
        this.#inFlight--
        this.#waiters.shift()?.(!this.#stop.signal.aborted)
      })
  }

  ready(): Promise<boolean> {
    if (this.#stop.signal.aborted) return Promise.resolve(false)
    if (this.#inFlight < (this.o.options.maxInFlight ?? 64)) return Promise.resolve(true)
    return new Promise((resolve) => this.#waiters.push(resolve))
  }

  close(): void {
    this.#stop.abort()
    for (const w of this.#waiters.splice(0)) w(false)
  }

  /** One §6 delivery, true once taken: retried with backoff or Retry-After until the deadline. */
  async #deliver(entry: MailboxEntry): Promise<boolean> {
    const { signal } = this.#stop
    const o = this.o.options
    const deadline = Date.now() + (o.deadlineMs ?? PROFILE.retryDeadlineMs)
    const backoff = new Backoff({ random: o.random })
    const request = {
      fetch: this.o.fetch,
      method: 'POST',
      headers: { ...JSON_HEADERS, 'idempotency-key': entry.messageId },
      body: entry.json,
      timeoutMs: o.attemptTimeoutMs ?? PROFILE.attemptTimeoutMs,
      signal,
    }
    for (;;) {
      try {
        await traced('agentmsg.relay.push', 'CLIENT', 'root', push, this.o.url, request)
        return true
      } catch (error) {
        if (signal.aborted) return false
        if (!isAgentMsgError(error)) throw error
        const { retryAfter } = error
        if (!error.shouldRetry() || (error.peerStatus === 429 && retryAfter === undefined)) {
          return false
        }
        const wait = retryAfter !== undefined ? retryAfter * 1000 : backoff.next()
        if (Date.now() + wait > deadline) return false
        await sleep(wait, signal)
        if (signal.aborted) return false
      }
    }
  }
}
