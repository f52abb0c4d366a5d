/**
 * In-page side of `../relay-agent.spec.ts`: a relay-only did:key agent made the way a user
 * makes one, `createAgent` with just the relay transport (`transports: [relayTransport()]`),
 * from a key pair generated here with WebCrypto. Each phase opens the agent again on the same
 * storage with one stream mode (SSE, then WebSocket), lets its one receive pipeline verify what
 * arrives, and answers each message with `reply()`, which goes through the relay as well.
 *
 * The page is served from the relay's own origin, so every request here is same-origin. The
 * transport's `fetch` and `WebSocket` are wrapped to record what crossed the wire, so the spec
 * can tell which transport actually carried a message, which cursor the relay gave it, and what
 * was acknowledged (the agent itself does not say).
 */
import { type Agent, createAgent } from '@agentmsg/client'
import {
  didKeyFromPublicKey,
  ed25519Signer,
  generateKeyPair,
  getDefaultCryptoProvider,
  type KeyPair,
  memoryStorage,
  type Storage,
} from '@agentmsg/core'
import { createKeyResolver } from '@agentmsg/core/identity'
import { verifyMessage } from '@agentmsg/core/receive'
import { createRelayClient, relayTransport } from '@agentmsg/transport-relay'
import {
  forbiddenWebSocket,
  newWire,
  recordingFetch,
  recordingWebSocket,
  type WireLog,
} from './_wire.js'

export type Mode = 'sse' | 'ws'
export type { WireLog }

export interface AgentInfo {
  did: string
  keyId: string
  provider: string
  isSecureContext: boolean
  origin: string
}

export interface Received {
  mode: Mode
  messageId: string
  from: string
  to: string | undefined
  conversationId: string
  sequence: number
  text: string
  /** As the agent's receive pipeline verified it. */
  level: number
  source: string
  transport: string
  /** Verified again in the page, independently of the agent, with a fresh resolver. */
  again: { level: number; source: string; keyId: string; alg: string }
  /** The relay's cursor of the message, as it came over the wire. */
  cursor: string | undefined
  replyId: string
  replyRoute: string
  replyRelayUrl: string | undefined
  replyText: string
}

export interface PhaseResult {
  received: Received[]
  wire: WireLog
  /** The agent's `error` events (refused deliveries among them). */
  rejected: string[]
  /** Stream, relay and other errors reported through `onError`. */
  streamErrors: string[]
  /** Messages still in the page's mailbox after the agent closed (acked ones are gone). */
  leftInMailbox: number
  /** The cursor the agent stored to resume its stream from. */
  storedCursor: unknown
  /** The subscription id the agent stored when it opened its mailbox. */
  subscriptionId: unknown
}

interface Phase {
  mode: Mode
  expected: number
  agent: Agent
  received: Received[]
  wire: WireLog
  rejected: string[]
  streamErrors: string[]
  done: Promise<void>
  failed: Promise<never>
}

export interface RelayAgentApi {
  /** Make the key pair (WebCrypto) and persist the agent's identity; nothing streams yet. */
  init(relayUrl: string): Promise<AgentInfo>
  /** Open the agent with one stream mode; resolves once its connection is up. */
  start(mode: Mode, expected: number): Promise<void>
  /** Wait for `expected` messages to be handled and answered, close the agent, report. */
  finish(): Promise<PhaseResult>
}

declare global {
  // eslint-disable-next-line no-var
  var __relayAgent: RelayAgentApi
}

let relayUrl = ''
let did = ''
let keys: KeyPair | undefined
let storage: Storage | undefined
let phase: Phase | undefined

function errorText(e: unknown): string {
  return e instanceof Error ? `${e.name}: ${e.message}` : String(e)
}

globalThis.__relayAgent = {
  async init(url) {
    relayUrl = url
    keys = await generateKeyPair()
    did = didKeyFromPublicKey(keys.publicKey)
    storage = memoryStorage()
    // The identity goes into storage on first use; a send-only agent opens no stream.
    const agent = await createAgent({
      storage,
      identity: { seed: keys.secretKey },
      relays: [relayUrl],
      transports: [relayTransport()],
      sendOnly: true,
    })
    const info = {
      did: agent.id,
      keyId: agent.identity.keyId,
      provider: getDefaultCryptoProvider().name,
      isSecureContext: globalThis.isSecureContext,
      origin: location.origin,
    }
    await agent.close()
    if (info.did !== did) throw new Error(`createAgent made ${info.did}, not the seed's ${did}`)
    return info
  },

  async start(mode, expected) {
    if (!storage) throw new Error('init() first')
    if (phase) throw new Error('an agent is already running')
    const wire = newWire()
    let opened: () => void = () => {}
    const open = new Promise<void>((resolve) => {
      opened = resolve
    })
    const received: Received[] = []
    const rejected: string[] = []
    const streamErrors: string[] = []
    let allDone: () => void = () => {}
    const done = new Promise<void>((resolve) => {
      allDone = resolve
    })
    let fail: (e: Error) => void = () => {}
    const failed = new Promise<never>((_, reject) => {
      fail = reject
    })
    failed.catch(() => {})
    const streamError = (e: unknown) => {
      streamErrors.push(errorText(e))
      fail(new Error(`the ${mode} agent reported: ${errorText(e)}`))
    }

    // The identity comes from storage now (the same did:key as in init()).
    const agent = await createAgent({
      storage,
      relays: [relayUrl],
      transports: [
        relayTransport({
          mode,
          fetch: recordingFetch(wire, opened),
          WebSocket: mode === 'ws' ? recordingWebSocket(wire, opened) : forbiddenWebSocket,
          backoff: { baseMs: 100, capMs: 1_000 },
          onError: streamError,
        }),
      ],
      onError: streamError,
    })
    agent.on('error', (e) => {
      rejected.push(`${e.message?.message_id ?? '?'}: ${errorText(e.error)}`)
      fail(new Error(`the ${mode} agent refused a message: ${errorText(e.error)}`))
    })
    agent.on('message', async (m) => {
      // Verified again here, independently of the agent's pipeline.
      const again = await verifyMessage(m.message, createKeyResolver())
      const replyText = `reply over ${mode}: ${m.text}`
      // The reply goes through the relay too (relay-only agent, found from `from.relays`).
      const reply = await agent.reply(m, replyText)
      received.push({
        mode,
        messageId: m.message.message_id,
        from: m.from,
        to: m.message.to.agent,
        conversationId: m.conversationId,
        sequence: m.message.sequence,
        text: m.text,
        level: m.level,
        source: m.source,
        transport: m.transport,
        again: {
          level: again.level,
          source: again.source,
          keyId: again.keyId,
          alg: again.signatures[0]?.alg ?? '',
        },
        cursor: wire.cursors[m.message.message_id],
        replyId: reply.messageId,
        replyRoute: reply.route,
        replyRelayUrl: reply.relayUrl,
        replyText,
      })
      if (received.length >= expected) allDone()
    })
    phase = { mode, expected, agent, received, wire, rejected, streamErrors, done, failed }
    await Promise.race([open, failed])
  },

  async finish() {
    const p = phase
    if (!p || !storage || !keys) throw new Error('start() first')
    await Promise.race([p.done, p.failed])
    await p.agent.close()
    phase = undefined
    // Retrieve over plain HTTP after the agent closed: acknowledged messages are gone.
    const left = await createRelayClient({
      relayUrl,
      agent: did,
      signer: ed25519Signer(keys),
    }).retrieve()
    const enc = encodeURIComponent(relayUrl)
    // Checked here in the page as well as by the spec: did:key level 3, intended transport.
    const onWire = p.mode === 'sse' ? p.wire.seenOnSse : p.wire.seenOnWs
    const offWire = p.mode === 'sse' ? p.wire.seenOnWs : p.wire.seenOnSse
    for (const r of p.received) {
      if (r.level !== 3 || r.source !== 'did-key') {
        throw new Error(
          `${r.messageId} verified at level ${r.level} (${r.source}), not 3 (did-key)`,
        )
      }
      if (!onWire.includes(r.messageId) || offWire.includes(r.messageId)) {
        throw new Error(`${r.messageId} did not arrive over ${p.mode} only`)
      }
    }
    return {
      received: p.received,
      wire: p.wire,
      rejected: p.rejected,
      streamErrors: p.streamErrors,
      leftInMailbox: left.messages.length,
      storedCursor: await storage.get(`relay/cursor/${enc}`),
      subscriptionId: await storage.get(`relay/sub/${enc}`),
    }
  },
}
