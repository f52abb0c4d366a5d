/**
 * Shared fixtures of the outbox tests: a scripted HTTPS inbox on 127.0.0.1 (node:https and a
 * development certificate), a fetch over node:https that trusts it, a transport that POSTs one
 * message per `send` with core's `httpRequest` (the shape of the https transport's delivery:
 * one attempt, failures as AgentMsgError), a manual clock, and signed messages.
 */
import type { IncomingHttpHeaders, ServerResponse } from 'node:http'
import https from 'node:https'
import type { AddressInfo } from 'node:net'
import {
  agentEndpoints,
  createMessage,
  type DeliveryTarget,
  didKeyFromPublicKey,
  ed25519Signer,
  generateKeyPair,
  type KeyPair,
  type Message,
  parseAgentId,
  signMessage,
  type Transport,
  type TransportFactory,
} from '@agentmsg/core'
import { httpRequest } from '@agentmsg/core/http'
import type { AddressPolicy } from '@agentmsg/core/server'
import { createDevCertificate, type DevCertificate } from '@agentmsg/dev-tls'
import { afterEach, beforeAll } from 'vitest'
import type { Clock } from '../src/agent/outbox.js'

export const DAY = 86_400_000
export const START = 1_800_000_000_000 // a whole second

export interface Received {
  method: string
  headers: IncomingHttpHeaders
  body: string
  messageId: string | undefined
}

export type Script = (req: Received, res: ServerResponse, n: number) => void

export interface TestInbox {
  port: number
  url: string
  requests: Received[]
  /** How each request is answered; `n` counts from 1. Defaults to 202. */
  script: Script
  /** message_id → how many times it was answered 202. */
  accepted: Map<string, number>
  close(): Promise<void>
}

let cert: DevCertificate
let keys: KeyPair
let agent: string
/** Run after each test, last first. */
export const cleanups: Array<() => Promise<unknown> | unknown> = []

/** Register the file's hooks: a certificate and a key before all, cleanups after each test. */
export function setupOutboxTests(): void {
  beforeAll(async () => {
    cert = await createDevCertificate()
    keys = await generateKeyPair()
    agent = didKeyFromPublicKey(keys.publicKey)
  })
  afterEach(async () => {
    while (cleanups.length > 0) await cleanups.pop()!()
  })
}

export const agentId = (): string => agent
export const devCa = (): string => cert.ca

export function reply(
  res: ServerResponse,
  status: number,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  res.writeHead(status, { 'Content-Type': 'application/json', ...headers })
  res.end(body === undefined ? '' : JSON.stringify(body))
}

export const accept: Script = (req, res) =>
  reply(res, 202, { status: 'accepted', message_id: req.messageId })

/** A bare node:https inbox on 127.0.0.1 that records requests and answers per `script`. */
export async function startInbox(port = 0): Promise<TestInbox> {
  const inbox = { requests: [], script: accept, accepted: new Map() } as unknown as TestInbox
  const server = https.createServer({ cert: cert.cert, key: cert.key }, (req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8')
      let messageId: string | undefined
      try {
        messageId = (JSON.parse(body) as { message_id?: string }).message_id
      } catch {
        // not JSON
      }
      inbox.requests.push({ method: req.method ?? '', headers: req.headers, body, messageId })
      res.on('finish', () => {
        if (res.statusCode === 202 && messageId) {
          inbox.accepted.set(messageId, (inbox.accepted.get(messageId) ?? 0) + 1)
        }
      })
      inbox.script(inbox.requests.at(-1)!, res, inbox.requests.length)
    })
  })
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  inbox.port = (server.address() as AddressInfo).port
  inbox.url = `https://127.0.0.1:${inbox.port}/.well-known/agentmsg/inbox`
  let closed = false
  inbox.close = async () => {
    if (closed) return
    closed = true
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }
  cleanups.push(inbox.close)
  return inbox
}

/** A fetch over node:https that trusts the dev CA, with an address policy checked first. */
export function testFetch(policy?: AddressPolicy): typeof fetch {
  return (async (input: string | URL, init: RequestInit = {}) => {
    const url = new URL(String(input))
    policy?.assertAddress(url.hostname)
    return new Promise<Response>((resolve, reject) => {
      const req = https.request(
        url,
        {
          method: init.method ?? 'GET',
          headers: init.headers as Record<string, string>,
          ca: cert.ca,
          ...(init.signal ? { signal: init.signal } : {}),
        },
        (res) => {
          const chunks: Buffer[] = []
          res.on('data', (c: Buffer) => chunks.push(c))
          res.on('error', reject)
          res.on('end', () => {
            const headers = new Headers()
            for (const [k, v] of Object.entries(res.headers)) if (v) headers.set(k, String(v))
            const body = Buffer.concat(chunks)
            resolve(new Response(body.length ? body : null, { status: res.statusCode!, headers }))
          })
        },
      )
      req.on('error', (e) => reject(new TypeError('fetch failed', { cause: e })))
      req.end(init.body as string | undefined)
    })
  }) as typeof fetch
}

/** The inbox target of a URL, addressed to the test agent; durable, as the https transport's. */
export const urlTarget = (url: string, durable = true): DeliveryTarget => ({
  kind: 'inbox',
  agent,
  urls: [url],
  route: 'direct',
  confidential: true,
  durable,
})

export const inboxTarget = (inbox: TestInbox): DeliveryTarget => urlTarget(inbox.url)

/**
 * A transport that POSTs one message per `send` to the target's URL and has an inbox target
 * for URL agents (or the given inbox): what the https transport does, minus its details.
 */
export function postingTransport(
  o: { fetch?: typeof fetch; timeoutMs?: number; durable?: boolean } = {},
): Transport {
  const post = o.fetch ?? testFetch()
  return {
    protocol: 'https',
    targets(peer) {
      if (!peer.inbox && parseAgentId(peer.agent).kind !== 'url') return []
      const url = peer.inbox ?? peer.document?.endpoints.inbox ?? agentEndpoints(peer.agent).inbox
      return [{ ...urlTarget(url, o.durable ?? true), agent: peer.agent }]
    },
    send: (message, target, options = {}) => {
      const url = target.urls[0]!
      return httpRequest(
        url,
        {
          fetch: post,
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': message.message_id },
          body: JSON.stringify(message),
          signal: options.signal,
          ...(o.timeoutMs !== undefined ? { timeoutMs: o.timeoutMs } : {}),
          what: `deliver to ${url}`,
        },
        async () => ({ messageId: message.message_id, target, url }),
      )
    },
    close: async () => {},
  }
}

export const postingFactory = (
  o: Parameters<typeof postingTransport>[0] = {},
): TransportFactory => ({
  protocol: 'https',
  create: () => postingTransport(o),
})

export async function message(
  text = 'hello',
  extra: Partial<Parameters<typeof createMessage>[0]> = {},
): Promise<Message> {
  const unsigned = createMessage({
    from: agent,
    to: agent,
    conversationId: 'c-1',
    sequence: 0,
    phase: 'greeting',
    text,
    ...extra,
  })
  return signMessage(unsigned, ed25519Signer(keys))
}

/** A {@link Clock} that only moves when told to. */
export interface ManualClock extends Clock {
  /** Move time forward by `ms`, firing every timer due on the way, earliest first. */
  advance(ms: number): void
  /** Fire timers, earliest first, moving time to each, until none is left. Returns how many fired. */
  runAll(): number
  pending(): number
  nextDue(): number | undefined
}

export function createManualClock(start = 0): ManualClock {
  let now = start
  let seq = 0
  const timers = new Map<number, { due: number; seq: number; fn: () => void }>()
  const earliest = (limit: number) => {
    let best: { due: number; seq: number; fn: () => void } | undefined
    for (const t of timers.values()) {
      if (t.due > limit) continue
      if (!best || t.due < best.due || (t.due === best.due && t.seq < best.seq)) best = t
    }
    return best
  }
  const fire = (t: { due: number; seq: number; fn: () => void }) => {
    timers.delete(t.seq)
    if (t.due > now) now = t.due
    t.fn()
  }
  return {
    now: () => now,
    setTimeout(fn, ms) {
      const id = ++seq
      timers.set(id, { due: now + (Number.isFinite(ms) && ms > 0 ? ms : 0), seq: id, fn })
      return id
    },
    clearTimeout(handle) {
      if (typeof handle === 'number') timers.delete(handle)
    },
    advance(ms) {
      if (!(Number.isFinite(ms) && ms >= 0)) throw new RangeError(`advance: bad ms ${ms}`)
      const target = now + ms
      for (let t = earliest(target); t; t = earliest(target)) fire(t)
      now = target
    },
    runAll() {
      let fired = 0
      for (let t = earliest(Infinity); t; t = earliest(Infinity)) {
        if (++fired > 100_000) throw new Error('runAll: more than 100000 timers fired')
        fire(t)
      }
      return fired
    },
    pending: () => timers.size,
    nextDue: () => earliest(Infinity)?.due,
  }
}
