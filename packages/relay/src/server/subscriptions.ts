/**
 * `POST /relay/subscribe` and `DELETE /relay/subscribe/{id}` (PROFILE §9, at most
 * `limits.subscriptionsPerAgent` per agent), and the feeds of verified webhook subscriptions.
 */
import { PROFILE } from '@agentmsg/core'
import { invalidFormat } from '@agentmsg/core/http'
import { parseStrictJson } from '@agentmsg/core/receive'
import {
  discardBody,
  errorReply,
  type HttpReply,
  jsonReply,
  TokenBuckets,
} from '@agentmsg/core/server'
import type { Subscription } from '../store/types.js'
import {
  authenticate,
  jsonBody,
  jsonObject,
  mailboxAgent,
  noContent,
  overCap,
  type RelayContext,
  requestBucket,
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
/** `limits.webhookVerifications` by default (types.ts). */
const WEBHOOK_VERIFICATIONS = { perMinute: 10, burst: 5 }
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
export function relaySubscriptions(ctx: RelayContext, fetchFn: typeof fetch, max: number) {
  const { store } = ctx
  const limits = ctx.options.limits
  const rate = { ...WEBHOOK_VERIFICATIONS, ...limits?.webhookVerifications }
  const verifications = new TokenBuckets(rate, ctx.now, limits?.maxTrackedKeys)
  /** Webhook feeds by subscription id. */
  const webhooks = new Map<string, { feed: Feed; sink: WebhookSink }>()
  /** Per agent, the last subscribe in progress: an agent's subscribes run one at a time. */
  const queues = new Map<string, Promise<unknown>>()
  /** On a shared store one process (elected) runs every webhook feed: each push happens once. */
  let leading = store.lead === undefined
  let resync: ReturnType<typeof setInterval> | undefined
  let unlead: (() => void) | undefined

  const add = async (agent: string, topics: string[], url: string | undefined) => {
    if ((await store.subscriptions(agent)).length >= max) {
      return overCap('subscriptions', max, SUBSCRIPTION_CAP_RETRY_AFTER)
    }
    if (url !== undefined)
      await verifyWebhook(fetchFn, url, ctx.options.webhook?.verifyTimeoutMs ?? 10_000)
    const webhook = url === undefined ? undefined : { url, verified: true }
    const subscription = await store.subscribe({ agent, topics, webhook, now: ctx.now() })
    if (subscription.webhook?.verified) startWebhook(subscription)
    return jsonReply(201, { status: 'subscribed', subscription_id: subscription.id })
  }

  /** Run `task` after the agent's earlier subscribes settled. */
  const serially = async <T>(agent: string, task: () => Promise<T>): Promise<T> => {
    const run = (queues.get(agent) ?? Promise.resolve()).then(task, task)
    const settled = run.catch(() => undefined)
    queues.set(agent, settled)
    return run.finally(() => {
      if (queues.get(agent) === settled) queues.delete(agent)
    })
  }

  /** Run the feeds of the verified webhook subscriptions stored, and only those. */
  const sync = async () => {
    const held = new Set<string>()
    for (const s of await store.subscriptions()) {
      if (!s.webhook?.verified) continue
      held.add(s.id)
      startWebhook(s)
    }
    for (const id of [...webhooks.keys()]) if (!held.has(id)) stopWebhook(id)
  }

  const setLeading = (value: boolean) => {
    leading = value
    clearInterval(resync)
    resync = undefined
    if (!leading) {
      for (const id of [...webhooks.keys()]) stopWebhook(id)
      return
    }
    const again = () => void sync().catch(ctx.onError)
    again()
    resync = setInterval(again, WEBHOOK_RESYNC_MS)
    resync.unref?.()
  }

  const startWebhook = (subscription: Subscription) => {
    const url = subscription.webhook?.url
    if (url === undefined || ctx.closing() || webhooks.has(subscription.id)) return
    // Another process leads the pushes on a shared store: it picks this one up.
    if (!leading) return
    const agent = subscription.agent
    const sink = new WebhookSink({
      url,
      fetch: fetchFn,
      options: ctx.options.webhook ?? {},
      ack: (entry) => store.ack(agent, entry.messageId, entry.from),
      onError: ctx.onError,
      onDelivered: () => ctx.options.observer?.delivered?.('webhook', 1),
    })
    webhooks.set(subscription.id, { feed: startFeed(ctx, agent, undefined, sink), sink })
  }

  const stopWebhook = (id: string) => {
    const w = webhooks.get(id)
    if (!w) return
    w.sink.close()
    w.feed.close()
    webhooks.delete(id)
  }

  return {
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
      await authenticate(ctx, request, url, agent, bytes)
      // Per client address, not per agent: an agent costs nothing to make.
      const bucket = requestBucket(request)
      const wait = webhookUrl === undefined || bucket === undefined ? 0 : verifications.take(bucket)
      if (wait > 0) {
        const message = `too many webhook verifications from this address; retry in ${wait} s`
        return errorReply('rate_limited', message, { retryAfter: wait })
      }
      // One at a time per agent, so that concurrent subscribes cannot pass the cap together.
      return serially(agent, () => add(agent, topics, webhookUrl))
    },

    async unsubscribe(request: Request, url: URL, id: string): Promise<HttpReply> {
      discardBody(request)
      const agent = await authenticate(ctx, request, url, undefined)
      if (await store.unsubscribe(id, agent)) {
        stopWebhook(id)
        return noContent()
      }
      if ((await store.subscriptions()).some((s) => s.id === id)) {
        return errorReply('forbidden', 'this subscription belongs to another agent')
      }
      return errorReply('not_found', 'no such subscription')
    },

    /** Start the stored webhook feeds; on a shared store once this process leads the pushes. */
    async load(): Promise<void> {
      if (store.lead === undefined) return sync()
      unlead = store.lead('webhooks', setLeading)
    },

    /** Stop every webhook feed. */
    close(): void {
      unlead?.()
      setLeading(false)
    },
  }
}
