/**
 * Shared fixtures of the inbox tests: a real HTTPS inbox and a client. Senders and signed
 * messages come from `@agentmsg/conformance` (`fixtureAgent`, `signedMessage`).
 */

import type { IncomingHttpHeaders } from 'node:http'
import { type Agent, request as httpsRequest } from 'node:https'
import { fixtureAgent } from '@agentmsg/conformance'
import type { KeyResolver, Message, ReceivedInfo } from '@agentmsg/core'
import { chainResolvers, didKeyResolver } from '@agentmsg/core/receive'
import { createInboxHandler } from '../src/inbox/handler.js'
import type { InboxHandler, InboxHandlerOptions } from '../src/inbox/types.js'
import { type HttpsServer, serveHttps } from '../src/node-server.js'
import { testCertificate } from './tls.js'

export const INBOX_PATH = '/.well-known/agentmsg/inbox'

/** A promise with its resolve function, to hold the application at a known point. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void
  const promise = new Promise<T>((r) => (resolve = r))
  return { promise, resolve }
}

/** A client response. */
export interface ClientResponse {
  status: number
  headers: IncomingHttpHeaders
  text: string
  json: any
}

/** One HTTPS request through node:https, trusting only the test certificate. */
export async function send(
  url: string,
  options: {
    method?: string
    headers?: Record<string, string>
    body?: string | Uint8Array
    agent?: Agent
  } = {},
): Promise<ClientResponse> {
  const { ca } = await testCertificate()
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      url,
      {
        method: options.method ?? 'POST',
        headers: options.headers,
        ca,
        agent: options.agent ?? false,
      },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8')
          let json: unknown
          try {
            json = JSON.parse(text)
          } catch {
            json = undefined
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json })
        })
        res.on('error', reject)
      },
    )
    req.on('error', reject)
    req.end(options.body)
  })
}

/** POST a message (object or raw text) to an inbox with the right Content-Type. */
export function post(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<ClientResponse> {
  const text = typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body)
  return send(url, { headers: { 'content-type': 'application/json', ...headers }, body: text })
}

/** A resolver of did:key plus keys listed in a table (for simple-name agents and levels 1–2). */
export function tableResolver(
  table: Map<string, { publicKey: Uint8Array; source: 'introduction' | 'pinned' }>,
): KeyResolver {
  return chainResolvers(didKeyResolver(), {
    async resolve(lookup) {
      const k = table.get(lookup.keyId)
      return k && lookup.alg === 'ed25519'
        ? { status: 'found', key: { alg: 'ed25519', publicKey: k.publicKey, source: k.source } }
        : { status: 'not_found', reason: `no key ${lookup.keyId}` }
    },
  })
}

/** A running inbox over real HTTPS, and what its application received. */
export interface TestInbox {
  agentId: string
  handler: InboxHandler
  server: HttpsServer
  url: string
  inboxUrl: string
  received: Array<{ message: Message; info: ReceivedInfo }>
  errors: unknown[]
}

const running: TestInbox[] = []

/** Start an inbox for a fresh did:key agent on 127.0.0.1; stopped by {@link stopInboxes}. */
export async function startInbox(options: Partial<InboxHandlerOptions> = {}): Promise<TestInbox> {
  const agentId = options.agentId ?? (await fixtureAgent()).id
  const received: TestInbox['received'] = []
  const errors: unknown[] = []
  const handler = createInboxHandler({
    resolver: didKeyResolver(),
    onMessage: async (message, info) => {
      received.push({ message, info })
    },
    onError: (e) => errors.push(e),
    ...options,
    agentId,
  })
  const { cert, key } = await testCertificate()
  const server = await serveHttps(handler, { tls: { cert, key }, onError: (e) => errors.push(e) })
  const inbox: TestInbox = {
    agentId,
    handler,
    server,
    url: server.url,
    inboxUrl: server.url + (options.basePath ?? '') + INBOX_PATH,
    received,
    errors,
  }
  running.push(inbox)
  return inbox
}

/** Close every inbox started since the last call, without waiting for blocked applications. */
export async function stopInboxes(): Promise<void> {
  const all = running.splice(0)
  await Promise.all(
    all.map(async (i) => {
      await i.handler.close({ drain: false })
      await i.server.close()
    }),
  )
}

/** Wait until `check` is true (polling), or fail after `ms`. */
export async function until(check: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out waiting')
    await new Promise((r) => setTimeout(r, 5))
  }
}
