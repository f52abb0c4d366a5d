/**
 * `POST /relay/subscribe` and `DELETE /relay/subscribe/{id}` (PROFILE §9, at most
 * `limits.subscriptionsPerAgent` per agent), and the feeds of verified webhook subscriptions.
 */
import { PROFILE } from '@agentmsg/core'
import { invalidFormat } from '@agentmsg/core/http'
import { parseStrictJson } from '@agentmsg/core/receive'
import { discardBody, errorReply, type HttpReply, jsonReply } from '@agentmsg/core/server'
import type { Subscription } from '../store/types.js'
import {
  authenticate,
  jsonBody,
  jsonObject,
  mailboxAgent,
  noContent,
  overCap,
  type RelayContext,
} from './context.js'
import { type Feed, startFeed } from './feed.js'
import { checkWebhookUrl, verifyWebhook, WebhookSink } from './webhook.js'

/** Largest subscribe request body: a reply's size (PROFILE §4). */
const MAX_SUBSCRIBE_BYTES = PROFILE.replyMaxBytes
/** Grammar of a topic (PROFILE §2). */
const TOPIC_RE = /^[a-z0-9._/-]{1,128}$/
const MAX_TOPICS = 100
/** `Retry-After` of a subscribe beyond the cap: room comes only when the agent deletes one. */
const SUBSCRIPTION_CAP_RETRY_AFTER = 60
/** How often the process leading webhook pushes on a shared store re-reads the subscriptions. */
const WEBHOOK_RESYNC_MS = 5_000

function topicsOf(value: unknown): string[] {
  if (value === undefined) return []
  if (!Array.isArray(value) || value.length > MAX_TOPICS) {
    throw invalidFormat(`must be an array of at most ${MAX_TOPICS} topics`, 'subscribe.topics')
  }
  return value.map((t, i) => {
    if (typeof t !== 'string' || !TOPIC_RE.test(t)) {
      throw invalidFormat('is not a topic ([a-z0-9._/-]{1,128})', `subscribe.topics[${i}]`)
    }
    return t
  })
}

/** Subscriptions of one relay and the webhook feeds they started. */
export class Subscriptions {
  readonly #ctx: RelayContext
  readonly #fetch: typeof fetch
  readonly #max: number
  /** Webhook feeds by subscription id. */
  readonly #webhooks = new Map<string, { feed: Feed; sink: WebhookSink }>()
  /** Per agent, the last subscribe in progress: an agent's subscribes run one at a time. */
  readonly #queues = new Map<string, Promise<unknown>>()
  /** On a shared store one process (elected) runs every webhook feed: each push happens once. */
  readonly #shared: boolean
  #leading = false
  #resync: ReturnType<typeof setInterval> | undefined
  #unlead: (() => void) | undefined

  constructor(ctx: RelayContext, fetchFn: typeof fetch, max: number) {
    this.#ctx = ctx
    this.#fetch = fetchFn
    this.#max = max
    this.#shared = ctx.store.lead !== undefined
  }

  async subscribe(request: Request, url: URL): Promise<HttpReply> {
    const bytes = await jsonBody(request, MAX_SUBSCRIBE_BYTES)
    if (!(bytes instanceof Uint8Array)) return bytes
    const body = jsonObject(parseStrictJson(bytes))
    const sub = jsonObject(body.subscribe, 'subscribe')
    const agent = mailboxAgent(sub.agent, 'subscribe.agent')
    const topics = topicsOf(sub.topics)
    let webhookUrl: string | undefined
    if (body.push !== undefined) {
      const push = jsonObject(body.push, 'push')
      if (push.mode !== 'webhook') throw invalidFormat('must be "webhook"', 'push.mode')
      webhookUrl = checkWebhookUrl(push.url)
    }
    await authenticate(this.#ctx, request, url, agent, bytes)
    // One at a time per agent, so that concurrent subscribes cannot pass the cap together.
    return this.#serially(agent, () => this.#add(agent, topics, webhookUrl))
  }

  async #add(agent: string, topics: string[], webhookUrl: string | undefined): Promise<HttpReply> {
    if ((await this.#ctx.store.subscriptions(agent)).length >= this.#max) {
      return overCap('subscriptions', this.#max, SUBSCRIPTION_CAP_RETRY_AFTER)
    }
    if (webhookUrl !== undefined) {
      const timeout = this.#ctx.options.webhook?.verifyTimeoutMs ?? 10_000
      await verifyWebhook(this.#fetch, webhookUrl, timeout)
    }
    const subscription = await this.#ctx.store.subscribe({
      agent,
      topics,
      ...(webhookUrl !== undefined ? { webhook: { url: webhookUrl, verified: true } } : {}),
      now: this.#ctx.now(),
    })
    if (subscription.webhook?.verified) this.#startWebhook(subscription)
    return jsonReply(201, { status: 'subscribed', subscription_id: subscription.id })
  }

  async unsubscribe(request: Request, url: URL, id: string): Promise<HttpReply> {
    discardBody(request.body)
    const agent = await authenticate(this.#ctx, request, url, undefined)
    if (await this.#ctx.store.unsubscribe(id, agent)) {
      this.#stopWebhook(id)
      return noContent()
    }
    const all = await this.#ctx.store.subscriptions()
    if (all.some((s) => s.id === id)) {
      return errorReply('forbidden', 'this subscription belongs to another agent')
    }
    return errorReply('not_found', 'no such subscription')
  }

  /** Run `task` after the agent's earlier subscribes settled. */
  async #serially<T>(agent: string, task: () => Promise<T>): Promise<T> {
    const before = this.#queues.get(agent) ?? Promise.resolve()
    const run = before.then(task, task)
    const settled = run.catch(() => undefined)
    this.#queues.set(agent, settled)
    try {
      return await run
    } finally {
      if (this.#queues.get(agent) === settled) this.#queues.delete(agent)
    }
  }

  /** Start the stored webhook feeds; on a shared store once this process leads the pushes. */
  async load(): Promise<void> {
    const lead = this.#ctx.store.lead?.bind(this.#ctx.store)
    if (lead === undefined) return this.#sync()
    this.#unlead = lead('webhooks', (leading) => this.#setLeading(leading))
  }

  /** Stop every webhook feed. */
  close(): void {
    this.#unlead?.()
    this.#setLeading(false)
  }

  /** Run the feeds of the verified webhook subscriptions stored, and only those. */
  async #sync(): Promise<void> {
    const held = new Set<string>()
    for (const s of await this.#ctx.store.subscriptions()) {
      if (!s.webhook?.verified) continue
      held.add(s.id)
      this.#startWebhook(s)
    }
    for (const id of [...this.#webhooks.keys()]) if (!held.has(id)) this.#stopWebhook(id)
  }

  #setLeading(leading: boolean): void {
    this.#leading = leading
    clearInterval(this.#resync)
    this.#resync = undefined
    if (!leading) {
      for (const id of [...this.#webhooks.keys()]) this.#stopWebhook(id)
      return
    }
    const sync = () => void this.#sync().catch(this.#ctx.onError)
    sync()
    this.#resync = setInterval(sync, WEBHOOK_RESYNC_MS)
    this.#resync.unref?.()
  }

  #startWebhook(subscription: Subscription): void {
    const url = subscription.webhook?.url
    if (url === undefined || this.#ctx.closing() || this.#webhooks.has(subscription.id)) return
    // Another process leads the pushes on a shared store: it picks this one up.
    if (this.#shared && !this.#leading) return
    const agent = subscription.agent
    const sink = new WebhookSink({
      url,
      fetch: this.#fetch,
      options: this.#ctx.options.webhook ?? {},
      ack: (entry) => this.#ctx.store.ack(agent, entry.messageId, entry.from),
      onError: this.#ctx.onError,
      onDelivered: () => this.#ctx.options.observer?.delivered?.('webhook', 1),
    })
    const feed = startFeed(this.#ctx, agent, undefined, sink)
    this.#webhooks.set(subscription.id, { feed, sink })
  }

  #stopWebhook(id: string): void {
    const w = this.#webhooks.get(id)
    if (!w) return
    w.sink.close()
    w.feed.close()
    this.#webhooks.delete(id)
  }
}
