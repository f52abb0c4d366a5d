/**
 * Shared fixtures of the relay server tests: a real HTTPS relay and its clients. Agents and
 * signed messages come from `@agentmsg/conformance` (`fixtureAgent`, `signedMessage`).
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { type FixtureAgent, fixtureAgent } from '@agentmsg/conformance'
import type { Message } from '@agentmsg/core'
import { utf8Encode } from '@agentmsg/core/http'
import { signRequest } from '@agentmsg/core/receive'
import { createAddressPolicy } from '@agentmsg/core/server'
import { createDevCertificate, type DevCertificate } from '@agentmsg/dev-tls'
import { createNodeFetch } from '@agentmsg/transport-https/node'
import { afterEach, expect } from 'vitest'
import { type RelayServer, type ServeRelayOptions, serveRelay } from '../src/server/serve.js'
import { openPostgresRelayStore } from '../src/store/postgres.js'
import type { RelayStore } from '../src/store/types.js'
import { dropPostgresSchema, freshPostgresSchema, POSTGRES_TEST_URL } from './postgres-helpers.js'

let cert: Promise<DevCertificate> | undefined

/** One self-signed certificate for 127.0.0.1 per test file. */
export function testCertificate(): Promise<DevCertificate> {
  cert ??= createDevCertificate()
  return cert
}

/** A client of one relay: plain and agent-signed requests over real HTTPS. */
export interface RelayClient {
  fetch: typeof fetch
  /** A request; signed as `as` when given (RFC 9421, PROFILE §9). */
  request(
    method: string,
    pathAndQuery: string,
    options?: {
      as?: FixtureAgent
      body?: unknown
      headers?: Record<string, string>
      created?: number
      nonce?: string
      signal?: AbortSignal
    },
  ): Promise<Response>
  publish(message: unknown, headers?: Record<string, string>): Promise<Response>
  subscribe(
    agent: FixtureAgent,
    extra?: Record<string, unknown>,
    topics?: string[],
  ): Promise<string>
  retrieve(
    agent: FixtureAgent,
    query?: string,
  ): Promise<{ messages: Message[]; cursor: string | null }>
}

export interface TestRelay extends RelayServer {
  client: RelayClient
  /** Errors the relay reported through onError (unexpected ones). */
  errors: unknown[]
  cert: DevCertificate
  dataDir: string
  stop(): Promise<void>
}

/** Serve a relay on 127.0.0.1 with a fresh data directory. */
export async function startRelay(
  options: Partial<ServeRelayOptions> & { clientNow?: () => number } = {},
): Promise<TestRelay> {
  const c = await testCertificate()
  const dataDir = await mkdtemp(path.join(tmpdir(), 'agentmsg-relay-'))
  const { clientNow, ...rest } = options
  const errors: unknown[] = []
  const postgres = rest.store === undefined ? await postgresStoreForTests(rest) : undefined
  const server = await serveRelay({
    ...(postgres ? { store: postgres.store } : {}),
    dataDir,
    tls: { cert: c.cert, key: c.key },
    allowPrivate: ['127.0.0.1'],
    ca: c.ca,
    onError: (e) => {
      errors.push(e)
    },
    ...rest,
  })
  const client = relayClient(server.url, c.ca, clientNow)
  return {
    ...server,
    client,
    errors,
    cert: c,
    dataDir,
    async stop() {
      await server.close()
      await postgres?.drop()
      await rm(dataDir, { recursive: true, force: true })
    },
  }
}

/**
 * With `AGENTMSG_RELAY_TEST_STORE=postgres` (the vitest project `relay-on-postgres`), relays
 * that the test does not give a store of its own keep their mailboxes in PostgreSQL, in a fresh
 * schema dropped at stop: the relay's HTTP-level tests run unchanged against that store.
 */
async function postgresStoreForTests(
  options: Partial<ServeRelayOptions>,
): Promise<{ store: RelayStore; drop(): Promise<void> } | undefined> {
  if (process.env.AGENTMSG_RELAY_TEST_STORE !== 'postgres') return undefined
  const url = POSTGRES_TEST_URL
  if (url === undefined)
    throw new Error('AGENTMSG_RELAY_TEST_STORE=postgres needs AGENTMSG_TEST_POSTGRES_URL')
  const schema = freshPostgresSchema()
  const store = await openPostgresRelayStore({
    connectionString: url,
    schema,
    ...(options.quota ? { quota: options.quota } : {}),
  })
  return { store, drop: () => dropPostgresSchema(url, schema) }
}

/** The relays of a test file, one per test: see {@link relayPerTest}. */
export interface RelayPerTest {
  /** Serve the test's relay; it is stopped after the test. */
  start(options?: Parameters<typeof startRelay>[0]): Promise<TestRelay>
  /** Run `fn` after the test, before the relay stops (the last deferred first). */
  defer(fn: () => Promise<void> | void): void
}

/**
 * Register the file's hook: after each test, run what the test deferred, check that its relay
 * reported no unexpected error, and stop the relay.
 */
export function relayPerTest(): RelayPerTest {
  let relay: TestRelay | undefined
  const deferred: Array<() => Promise<void> | void> = []
  afterEach(async () => {
    for (const fn of deferred.splice(0).reverse()) await fn()
    const r = relay
    relay = undefined
    if (r) {
      expect(r.errors).toEqual([])
      await r.stop()
    }
  })
  return {
    async start(options) {
      relay = await startRelay(options)
      return relay
    },
    defer: (fn) => void deferred.push(fn),
  }
}

/** Alice and Bob on `relay`, Bob subscribed so that his mailbox takes messages. */
export async function aliceAndBob(
  relay: TestRelay,
): Promise<{ client: RelayClient; alice: FixtureAgent; bob: FixtureAgent }> {
  const alice = await fixtureAgent()
  const bob = await fixtureAgent()
  await relay.client.subscribe(bob)
  return { client: relay.client, alice, bob }
}

export function clientFetch(ca: string, timeoutMs = 30_000): typeof fetch {
  return createNodeFetch({
    ca,
    addressPolicy: createAddressPolicy({ allow: ['127.0.0.1'] }),
    timeoutMs,
  })
}

export function relayClient(base: string, ca: string, now: () => number = Date.now): RelayClient {
  const fetchFn = clientFetch(ca, 0)
  const request: RelayClient['request'] = async (method, pathAndQuery, o = {}) => {
    const url = new URL(base + pathAndQuery).href
    const body =
      o.body === undefined
        ? undefined
        : typeof o.body === 'string'
          ? utf8Encode(o.body)
          : utf8Encode(JSON.stringify(o.body))
    const headers: Record<string, string> = { ...o.headers }
    if (body !== undefined && headers['content-type'] === undefined) {
      headers['content-type'] = 'application/json'
    }
    if (o.as) {
      Object.assign(
        headers,
        await signRequest({
          method,
          url,
          ...(body !== undefined ? { body } : {}),
          signer: o.as.signer,
          created: o.created ?? Math.floor(now() / 1000),
          ...(o.nonce !== undefined ? { nonce: o.nonce } : {}),
        }),
      )
    }
    return fetchFn(url, {
      method,
      headers,
      ...(body !== undefined ? { body: body as Uint8Array<ArrayBuffer> } : {}),
      ...(o.signal ? { signal: o.signal } : {}),
    })
  }
  return {
    fetch: fetchFn,
    request,
    publish: (message, headers) =>
      request('POST', '/relay/publish', { body: message, ...(headers ? { headers } : {}) }),
    async subscribe(agent, extra = {}, topics) {
      const res = await request('POST', '/relay/subscribe', {
        as: agent,
        body: { subscribe: { agent: agent.id, ...(topics ? { topics } : {}) }, ...extra },
      })
      const json = (await res.json()) as {
        subscription_id?: string
        code?: string
        message?: string
      }
      if (res.status !== 201) throw new Error(`subscribe: ${res.status} ${JSON.stringify(json)}`)
      return json.subscription_id!
    },
    async retrieve(agent, query = '') {
      const res = await request(
        'GET',
        `/relay/messages?agent=${encodeURIComponent(agent.id)}${query}`,
        {
          as: agent,
        },
      )
      if (res.status !== 200) throw new Error(`retrieve: ${res.status} ${await res.text()}`)
      return (await res.json()) as { messages: Message[]; cursor: string | null }
    },
  }
}

/** One SSE event. */
export interface SseEvent {
  id?: string
  event?: string
  data?: string
}

/** Read SSE events from a streaming body; `comments` counts comment lines. */
export function sseReader(body: ReadableStream<Uint8Array>): {
  next(): Promise<SseEvent | undefined>
  /** Read one more chunk; false at the end. */
  readMore(): Promise<boolean>
  comments: () => number
  cancel(): Promise<void>
} {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  let buffer = ''
  let comments = 0
  const queue: SseEvent[] = []
  let done = false
  const parse = () => {
    for (;;) {
      const end = buffer.indexOf('\n\n')
      if (end < 0) return
      const block = buffer.slice(0, end)
      buffer = buffer.slice(end + 2)
      const ev: SseEvent = {}
      let any = false
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) {
          comments++
          continue
        }
        const colon = line.indexOf(':')
        const field = colon < 0 ? line : line.slice(0, colon)
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '')
        if (field === 'id' || field === 'event' || field === 'data') {
          ev[field] = value
          any = true
        }
      }
      if (any) queue.push(ev)
    }
  }
  return {
    async next() {
      while (queue.length === 0 && !done) {
        const r = await reader.read()
        if (r.done) {
          done = true
          break
        }
        buffer += decoder.decode(r.value, { stream: true })
        parse()
      }
      return queue.shift()
    },
    async readMore() {
      const r = await reader.read()
      if (r.done) return false
      buffer += decoder.decode(r.value, { stream: true })
      parse()
      return true
    },
    comments: () => comments,
    cancel: () => reader.cancel().catch(() => undefined),
  }
}

/** Wait until `check` is true (polling). */
export async function until(
  check: () => boolean | Promise<boolean>,
  timeoutMs = 10_000,
): Promise<void> {
  const start = Date.now()
  while (!(await check())) {
    if (Date.now() - start > timeoutMs) throw new Error('timed out waiting')
    await new Promise((r) => setTimeout(r, 20))
  }
}
