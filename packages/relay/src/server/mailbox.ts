/** A mailbox's owner reading it (PROFILE §9): pages, acknowledgements, SSE; each authenticated. */
import { PROFILE } from '@agentmsg/core'
import { invalidFormat } from '@agentmsg/core/http'
import { parseStrictJson } from '@agentmsg/core/receive'
import { discardBody, errorReply, jsonReply } from '@agentmsg/core/server'
import {
  ackEntry,
  authenticate,
  cursorParam,
  feedContext,
  jsonBody,
  jsonObject,
  mailboxAgent,
  noContent,
  type RelayContext,
  type RelayReply,
  requestBucket,
} from './context.js'
import { type Feed, startFeed } from './feed.js'
import { SseChannel } from './sse.js'

/** Largest `POST /relay/ack` body: 500 entries of a long agent URL and a 128-character id. */
const MAX_ACK_BYTES = PROFILE.maxMessageBytes

function pageLimit(given: string | null): number {
  if (given === null) return PROFILE.pageLimit
  if (!/^[0-9]{1,9}$/.test(given) || Number(given) < 1) {
    throw invalidFormat('must be a positive integer', 'limit')
  }
  return Math.min(PROFILE.maxPageLimit, Number(given))
}

/** The mailbox a request's `?agent=` names: its owner authenticates for it (PROFILE §9). */
const queryAgent = (url: URL) => mailboxAgent(url.searchParams.get('agent') ?? undefined, 'agent')

/** Read a page of a mailbox; a cursor the store does not know is the client's error (400). */
async function read(ctx: RelayContext, agent: string, after: string | undefined, limit: number) {
  try {
    // Writes already asked for (a WebSocket ack frame, say) land before a client's retrieve.
    await ctx.store.settled?.()
    return await ctx.store.retrieve(agent, {
      after,
      limit,
      maxBytes: PROFILE.pageBytes,
      now: ctx.now(),
    })
  } catch (error) {
    if (error instanceof RangeError) throw invalidFormat('is not a cursor of this relay', 'after')
    throw error
  }
}

/** A mailbox endpoint; `id`: the decoded last path segment. */
type Endpoint = (ctx: RelayContext, request: Request, url: URL, id: string) => Promise<RelayReply>

/** `GET /relay/messages?agent=&after=&limit=`: oldest first, at most 500 and 8 MiB. */
export const retrieveMessages: Endpoint = async (ctx, request, url) => {
  const agent = queryAgent(url)
  const after = cursorParam(url.searchParams.get('after'))
  const count = pageLimit(url.searchParams.get('limit'))
  await authenticate(ctx, request, url, agent)
  const page = await read(ctx, agent, after, count)
  if (page.entries.length > 0) ctx.options.observer?.delivered?.('retrieve', page.entries.length)
  const cursor = page.cursor ?? after
  // The stored JSON goes out as it is: no parse and re-serialisation per message.
  const text = `{"messages":[${page.entries.map((e) => e.json).join(',')}],"cursor":${JSON.stringify(cursor ?? null)}}`
  return { ...jsonReply(200, null, { 'cache-control': 'no-store' }), body: text }
}

/** `DELETE /relay/messages/{id}?agent=&from=`: 204, or 404 when nothing matched. */
export const acknowledgeMessage: Endpoint = async (ctx, request, url, messageId) => {
  discardBody(request)
  const agent = queryAgent(url)
  const { from } = ackEntry(messageId, url.searchParams.get('from') ?? undefined, '', true)
  await authenticate(ctx, request, url, agent)
  const removed = await ctx.store.ack(agent, messageId, from)
  if (removed === 0) return errorReply('not_found', 'no such message in this mailbox')
  return noContent()
}

/** `POST /relay/ack` (PROFILE §9) `{agent, acks:[{message_id, from}, …]}`; no match: skipped. */
export const acknowledgeMany: Endpoint = async (ctx, request, url) => {
  const bytes = await jsonBody(request, MAX_ACK_BYTES)
  if (!(bytes instanceof Uint8Array)) return bytes
  const body = jsonObject(parseStrictJson(bytes))
  const agent = mailboxAgent(body.agent, 'agent')
  if (!Array.isArray(body.acks) || body.acks.length < 1 || body.acks.length > PROFILE.maxAcks) {
    throw invalidFormat(`must be an array of 1 to ${PROFILE.maxAcks} entries`, 'acks')
  }
  const acks = body.acks.map((entry: unknown, i) => {
    const field = `acks[${i}]`
    const { message_id, from } = jsonObject(entry, field)
    return ackEntry(message_id, from, `${field}.`)
  })
  await authenticate(ctx, request, url, agent, bytes)
  // One call per entry: a store that commits in groups (SQLite) writes them together.
  const counts = await Promise.all(acks.map((a) => ctx.store.ack(agent, a.messageId, a.from)))
  const removed = counts.reduce((sum, n) => sum + n, 0)
  return jsonReply(200, { status: 'acknowledged', removed })
}

/**
 * `GET /relay/stream?agent=&after=`: held, then live messages as SSE, under the stream caps of
 * PROFILE §9 (per agent and per client address, with WebSockets; the relay's unsent bytes).
 */
export const streamMessages: Endpoint = async (ctx, request, url) => {
  const agent = queryAgent(url)
  // Last-Event-ID wins over after (PROFILE §9).
  const lastEventId = request.headers.get('last-event-id')
  const after = cursorParam(
    lastEventId !== null && lastEventId !== '' ? lastEventId : url.searchParams.get('after'),
  )
  await authenticate(ctx, request, url, agent)
  if (ctx.closing())
    return errorReply('unavailable', 'the relay is shutting down', { retryAfter: 5 })
  // A bad cursor is a 400 now, not a stream that ends at once.
  await read(ctx, agent, after, 1)
  const slot = ctx.claimStream(agent, 'sse', requestBucket(request))
  if (!('release' in slot)) return errorReply(slot.code, slot.message, slot)
  const o = ctx.options
  let feed: Feed | undefined
  let untrack: (() => void) | undefined
  const channel = new SseChannel({
    heartbeatMs: o.heartbeatMs,
    stallTimeoutMs: o.stallTimeoutMs,
    unsent: slot.unsent,
    onEnd: () => {
      feed?.close()
      untrack?.()
      slot.release()
    },
  })
  untrack = ctx.track(() => channel.close())
  feed = startFeed(feedContext(ctx, 'sse'), agent, after, channel)
  const { headers } = jsonReply(200, null, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    'x-accel-buffering': 'no',
  })
  return new Response(channel.stream, { status: 200, headers })
}
