/** Shared fixtures of the https transport tests: a scripted HTTPS inbox, messages. */
import type { IncomingHttpHeaders, ServerResponse } from 'node:http'
import https from 'node:https'
import type { AddressInfo } from 'node:net'
import {
  createMessage,
  type DeliveryTarget,
  didKeyFromPublicKey,
  ed25519Signer,
  generateKeyPair,
  type IdentityDocument,
  type KeyPair,
  type Message,
  memoryStorage,
  signMessage,
  type TransportComponents,
} from '@agentmsg/core'
import { createKeyResolver } from '@agentmsg/core/identity'
import { createAddressPolicy } from '@agentmsg/core/server'
import { afterEach, beforeAll } from 'vitest'
import { createNodeFetch } from '../src/node-fetch.js'
import { testCertificate } from './tls.js'

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

let cert: { cert: string; key: string; ca: string }
let keys: KeyPair
let agent: string
/** Run after each test, last first. */
export const cleanups: Array<() => Promise<unknown> | unknown> = []

/** Register the file's hooks: a certificate and a key before all, cleanups after each test. */
export function setupTransportTests(): void {
  beforeAll(async () => {
    cert = await testCertificate()
    keys = await generateKeyPair()
    agent = didKeyFromPublicKey(keys.publicKey)
  })
  afterEach(async () => {
    while (cleanups.length > 0) await cleanups.pop()!()
  })
}

/** The test agent's id (sender and addressee of every test message). */
export const agentId = (): string => agent

export function reply(
  res: ServerResponse,
  status: number,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  const text = body === undefined ? '' : JSON.stringify(body)
  res.writeHead(status, { 'Content-Type': 'application/json', ...headers })
  res.end(text)
}

export const accept: Script = (req, res) =>
  reply(res, 202, { status: 'accepted', message_id: req.messageId })

/** A bare node:https inbox on 127.0.0.1 that records requests and answers per `script`. */
export async function startInbox(port = 0): Promise<TestInbox> {
  const inbox = {
    requests: [] as Received[],
    script: accept,
    accepted: new Map<string, number>(),
  } as TestInbox
  const server = https.createServer(
    { cert: cert.cert, key: cert.key, minVersion: 'TLSv1.2' },
    (req, res) => {
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
        const received: Received = {
          method: req.method ?? '',
          headers: req.headers,
          body,
          messageId,
        }
        inbox.requests.push(received)
        res.on('finish', () => {
          if (res.statusCode === 202 && messageId) {
            inbox.accepted.set(messageId, (inbox.accepted.get(messageId) ?? 0) + 1)
          }
        })
        inbox.script(received, res, inbox.requests.length)
      })
    },
  )
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

/** A fetch that trusts the test certificate and may connect to `allow`. */
export function testFetch(allow = ['127.0.0.1']): typeof fetch {
  return createNodeFetch({ ca: cert.ca, addressPolicy: createAddressPolicy({ allow }) })
}

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

/** The inbox target of a URL, addressed to the test agent. */
export const urlTarget = (url: string): DeliveryTarget => ({
  kind: 'inbox',
  agent,
  urls: [url],
  route: 'direct',
})

export const inboxTarget = (inbox: TestInbox): DeliveryTarget => urlTarget(inbox.url)

/** What an agent gives its transports, for agent `id` (its own key, memory storage). */
export async function transportComponents(
  id: string,
  identity?: IdentityDocument,
): Promise<TransportComponents> {
  return {
    agentId: id,
    signer: ed25519Signer(await generateKeyPair()),
    resolver: createKeyResolver(),
    storage: memoryStorage(),
    relays: [],
    trusts: () => false,
    identityDocument: () => identity,
    now: Date.now,
    onError: () => {},
  }
}
