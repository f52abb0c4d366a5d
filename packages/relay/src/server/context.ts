/** The relay's state as its endpoints see it, and the request helpers they share. */
import { type KeyResolver, parseAgentId, parseMessageId } from '@agentmsg/core'
import { invalidFormat, readBody } from '@agentmsg/core/http'
import {
  discardBody,
  errorReply,
  type HttpReply,
  isJsonContentType,
  jsonReply,
  type NonceMemory,
  verifyRequest,
} from '@agentmsg/core/server'
import type { FeedContext } from './feed.js'
import type { RelayHandlerOptions, RelayServerHandler, StreamKind } from './types.js'

/** The relay's state, as its endpoints see it (its feeds' context too). */
export interface RelayContext extends FeedContext {
  /** The normalised base URL (PROFILE §9). */
  readonly baseUrl: string
  /** Its origin: `@target-uri` = origin + the request target as received. */
  readonly origin: string
  readonly options: RelayHandlerOptions
  readonly resolver: KeyResolver
  readonly nonces: NonceMemory
  /** True once `close()` began: new publishes and streams are refused (503). */
  closing(): boolean
  /** As RelayServerHandler's. */
  track(closer: () => void): () => void
  claimStream: RelayServerHandler['claimStream']
}

const feedContexts = new WeakMap<RelayContext, Partial<Record<StreamKind, FeedContext>>>()

/** The context of `kind` streams' feeds: one per relay, not a copy per stream (idle memory). */
export function feedContext(ctx: RelayContext, kind: StreamKind): FeedContext {
  const kinds = feedContexts.get(ctx) ?? {}
  feedContexts.set(ctx, kinds)
  kinds[kind] ??= { ...ctx, delivered: (n) => ctx.options.observer?.delivered?.(kind, n) }
  return kinds[kind]
}

/**
 * Each request's client-address buckets: for rates and the nonce memory's share (PROFILE §6),
 * and the one stored bytes are charged to (§9, IPv6 per /48).
 */
const buckets = new WeakMap<
  Request,
  { rate: string | undefined; storage: () => string | undefined }
>()

/** `storage` is worked out only when asked for: publishes alone are charged. */
export function setRequestBucket(
  request: Request,
  rate: string | undefined,
  storage: () => string | undefined,
): void {
  buckets.set(request, { rate, storage })
}

export const storageBucketOf = (request: Request) => buckets.get(request)?.storage()
/** The client-address bucket of `request`; undefined while per-address limiting is off. */
export const requestBucket = (request: Request) => buckets.get(request)?.rate

/** 429 for a subscription beyond the per-agent cap (PROFILE §9; streams: streams.ts). */
export const overCap = (what: string, max: number, retryAfter: number) =>
  errorReply('rate_limited', `at most ${max} ${what} per agent; retry later`, { retryAfter })

/** 204, with the CORS headers every answer carries (PROFILE §6). */
export function noContent(): HttpReply {
  const { 'content-type': _, ...headers } = jsonReply(204, null).headers
  return { status: 204, headers, body: null }
}

/** An endpoint's answer: data, or a streaming `Response` (SSE). */
export type RelayReply = HttpReply | Response

/** The JSON body of `request`, at most `maxBytes`: the bytes, or the 415 / 413 to answer. */
export async function jsonBody(request: Request, maxBytes: number) {
  if (!isJsonContentType(request.headers.get('content-type'))) {
    discardBody(request)
    const message = 'Content-Type must be application/json (charset utf-8)'
    return errorReply('unsupported_media_type', message)
  }
  const bytes = await readBody(request, { maxBytes, failure: 'invalid_format' })
  // Over the limit: the connection closes (PROFILE §6).
  const headers = { connection: 'close' }
  return bytes ?? errorReply('payload_too_large', 'the request body exceeds the limit', { headers })
}

/** A JSON object, else `invalid_format` (naming `field` when given). */
export function jsonObject(value: unknown, field?: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw field === undefined
      ? invalidFormat('the request body must be a JSON object')
      : invalidFormat('must be an object', field)
  }
  return value as Record<string, unknown>
}

/** A mailbox owner: did:key and URL agents only (PROFILE §9). */
export function mailboxAgent(value: unknown, field: string): string {
  if (typeof value !== 'string' || value === '') throw invalidFormat('is required', field)
  const { kind } = parseAgentId(value, field)
  if (kind !== 'did:key' && kind !== 'url') {
    throw invalidFormat('mailboxes exist only for did:key and URL agents', field)
  }
  return value
}

/**
 * One acknowledgement (PROFILE §9): a `message_id` of §2's grammar and `from` an agent id (a
 * `DELETE` may leave it out), checked before the store sees them, so every store answers alike.
 */
export function ackEntry(messageId: unknown, from: unknown, field = '', fromOptional = false) {
  const id = parseMessageId(messageId, `${field}message_id`)
  if (from === undefined && fromOptional) return { messageId: id, from }
  return { messageId: id, from: parseAgentId(from, `${field}from`).id }
}

/** An `after` / `Last-Event-ID` cursor as given, or undefined when absent or empty. */
export function cursorParam(value: string | null): string | undefined {
  if (value === null || value === '') return undefined
  if (value.length > 128) throw invalidFormat('is not a cursor of this relay', 'after')
  return value
}

export function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment)
  } catch {
    throw invalidFormat('is not a valid path segment', 'path')
  }
}

/**
 * Agent auth (RFC 9421, PROFILE §9) of a request to `url`; resolves to the authenticated agent.
 * `expectedAgent`, when given, is the agent the request acts for (403 for another's key).
 */
export async function authenticate(
  ctx: RelayContext,
  request: Request,
  url: URL,
  expectedAgent: string | undefined,
  body?: Uint8Array,
): Promise<string> {
  const { store } = ctx
  const { agent } = await verifyRequest({
    method: request.method,
    targetUri: `${ctx.origin}${url.pathname}${url.search}`,
    headers: request.headers,
    body,
    resolver: ctx.resolver,
    nonces: ctx.nonces,
    // Several relay processes on one store share its nonce memory (PROFILE §9).
    sharedNonces:
      store.rememberNonce &&
      ((key, nonce, until) => store.rememberNonce!(key, nonce, until, ctx.now())),
    // The nonce counts against the client-address bucket's share (PROFILE §6).
    bucket: requestBucket(request),
    expectedAgent,
    now: ctx.now(),
  })
  return agent
}
