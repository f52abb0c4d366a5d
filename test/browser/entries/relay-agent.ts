/**
 * In-page side of `../relay-agent.spec.ts`: a relay-only agent (did:key made here with
 * WebCrypto) that opens its mailbox on the relay, receives over SSE or WebSocket with the
 * isomorphic client, and answers each message through the relay.
 *
 * The page is served from the relay's own origin, so every request here is same-origin. The
 * client's `fetch` and `WebSocket` are wrapped to record what crossed the wire, so the spec can
 * tell which transport actually carried a message (the client itself does not say).
 */
import {
  createKeyResolver,
  createMessage,
  didKeyFromPublicKey,
  ed25519Signer,
  generateKeyPair,
  getDefaultCryptoProvider,
  signMessage,
  type Signer,
} from '@agentmsg/core'
import {
  createRelayClient,
  type RelayClient,
  type StreamHandle,
  type WebSocketConstructor,
} from '@agentmsg/transport-relay'

export type Mode = 'sse' | 'ws'

export interface AgentInfo {
  did: string
  keyId: string
  provider: string
  isSecureContext: boolean
  origin: string
  subscriptionId: string
}

/** What crossed the wire while one stream ran. */
export interface WireLog {
  /** `GET /relay/stream` requests made (SSE connections). */
  sseConnections: number
  /** Status of the SSE responses. */
  sseStatuses: number[]
  /** WebSockets opened. */
  wsConnections: number
  /** Types of the frames the relay sent over the WebSocket. */
  wsFrameTypes: string[]
  /** Message ids seen inside SSE event data / WebSocket message frames. */
  seenOnSse: string[]
  seenOnWs: string[]
  /** Every other request the client made (method and path). */
  requests: string[]
}

export interface Received {
  mode: Mode
  messageId: string
  from: string
  to: string | undefined
  conversationId: string
  sequence: number
  text: string | undefined
  level: number
  source: string
  keyId: string
  alg: string
  cursor: string
  replyId: string
  replyText: string
}

export interface PhaseResult {
  received: Received[]
  wire: WireLog
  rejected: string[]
  streamErrors: string[]
  /** Messages still in the page's mailbox after the stream closed (acked ones are gone). */
  leftInMailbox: number
  handleCursor: string | undefined
}

interface Phase {
  mode: Mode
  expected: number
  received: Received[]
  wire: WireLog
  rejected: string[]
  streamErrors: string[]
  handle: StreamHandle
  client: RelayClient
  done: Promise<void>
}

export interface RelayAgentApi {
  init(relayUrl: string): Promise<AgentInfo>
  /** Open a stream; resolves once its connection is up (SSE response / WebSocket auth sent). */
  start(mode: Mode, expected: number): Promise<void>
  /** Wait for `expected` messages to be handled and answered, close the stream, report. */
  finish(): Promise<PhaseResult>
}

declare global {
  // eslint-disable-next-line no-var
  var __relayAgent: RelayAgentApi
}

const ID_RE = /"message_id"\s*:\s*"([^"]+)"/g

function idsIn(text: string): string[] {
  return [...text.matchAll(ID_RE)].map((m) => m[1]!)
}

function newWire(): WireLog {
  return {
    sseConnections: 0,
    sseStatuses: [],
    wsConnections: 0,
    wsFrameTypes: [],
    seenOnSse: [],
    seenOnWs: [],
    requests: [],
  }
}

let relayUrl = ''
let did = ''
let signer: Signer | undefined
let phase: Phase | undefined

/** `fetch` that records requests and copies what SSE streams carry. */
function recordingFetch(wire: WireLog, onSseOpen: () => void): typeof fetch {
  return async (input, init) => {
    const request = new Request(input, init)
    const url = new URL(request.url)
    if (url.pathname !== '/relay/stream') {
      wire.requests.push(`${request.method} ${url.pathname}`)
      return fetch(request)
    }
    wire.sseConnections++
    const res = await fetch(request)
    wire.sseStatuses.push(res.status)
    if (!res.ok || !res.body) return res
    onSseOpen()
    const decoder = new TextDecoder()
    let pending = ''
    const tap = new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        pending += decoder.decode(chunk, { stream: true })
        // Complete lines only: an id may straddle two chunks.
        const cut = pending.lastIndexOf('\n')
        if (cut >= 0) {
          for (const line of pending.slice(0, cut).split('\n')) {
            if (line.startsWith('data:')) wire.seenOnSse.push(...idsIn(line))
          }
          pending = pending.slice(cut + 1)
        }
        controller.enqueue(chunk)
      },
    })
    return new Response(res.body.pipeThrough(tap), {
      status: res.status,
      statusText: res.statusText,
      headers: res.headers,
    })
  }
}

/** The browser's WebSocket, recording frames; or one that refuses to exist. */
function recordingWebSocket(wire: WireLog, onAuthSent: () => void): WebSocketConstructor {
  return class extends WebSocket {
    constructor(url: string) {
      super(url)
      wire.wsConnections++
      this.addEventListener('message', (event: MessageEvent) => {
        if (typeof event.data !== 'string') return
        try {
          const frame = JSON.parse(event.data) as { type?: unknown }
          wire.wsFrameTypes.push(String(frame.type))
          if (frame.type === 'message') wire.seenOnWs.push(...idsIn(event.data))
        } catch {
          wire.wsFrameTypes.push('(unparsable)')
        }
      })
    }
    override send(data: string): void {
      super.send(data)
      if (/^\{"type":"auth"/.test(data)) onAuthSent()
    }
  } as unknown as WebSocketConstructor
}

const forbiddenWebSocket = class {
  constructor(url: string) {
    throw new Error(`the SSE phase must not open a WebSocket (${url})`)
  }
} as unknown as WebSocketConstructor

function errorText(e: unknown): string {
  return e instanceof Error ? `${e.name}: ${e.message}` : String(e)
}

globalThis.__relayAgent = {
  async init(url) {
    relayUrl = url
    const keys = await generateKeyPair()
    did = didKeyFromPublicKey(keys.publicKey)
    signer = ed25519Signer(keys)
    const client = createRelayClient({
      relayUrl,
      agent: did,
      signer,
      resolver: createKeyResolver(),
    })
    const { subscriptionId } = await client.subscribe()
    return {
      did,
      keyId: signer.keyId,
      provider: getDefaultCryptoProvider().name,
      isSecureContext: globalThis.isSecureContext,
      origin: location.origin,
      subscriptionId,
    }
  },

  async start(mode, expected) {
    if (!signer) throw new Error('init() first')
    if (phase) throw new Error('a stream is already running')
    const me = signer
    const wire = newWire()
    let opened: () => void = () => {}
    const open = new Promise<void>((resolve) => {
      opened = resolve
    })
    const client = createRelayClient({
      relayUrl,
      agent: did,
      signer: me,
      resolver: createKeyResolver(),
      fetch: recordingFetch(wire, opened),
      WebSocket: mode === 'ws' ? recordingWebSocket(wire, opened) : forbiddenWebSocket,
    })
    const received: Received[] = []
    let allDone: () => void = () => {}
    const done = new Promise<void>((resolve) => {
      allDone = resolve
    })
    const rejected: string[] = []
    const streamErrors: string[] = []
    const handle = client.stream(
      async ({ message, verified, cursor }) => {
        const part = message.body.parts[0]
        const text = part && 'text' in part ? (part.text as string) : undefined
        const replyText = `reply over ${mode}: ${text ?? ''}`
        const reply = await signMessage(
          createMessage({
            from: did,
            to: message.from.agent,
            conversationId: message.conversation_id,
            sequence: message.sequence + 1,
            phase: 'response',
            contentType: 'text/plain',
            text: replyText,
          }),
          me,
        )
        // The reply goes through the relay too (relay-only agent); the stream acks the
        // received message after this handler resolves.
        await client.publish(reply)
        received.push({
          mode,
          messageId: message.message_id,
          from: message.from.agent,
          to: message.to.agent,
          conversationId: message.conversation_id,
          sequence: message.sequence,
          text,
          level: verified.level,
          source: verified.source,
          keyId: verified.keyId,
          alg: verified.alg,
          cursor,
          replyId: reply.message_id,
          replyText,
        })
        if (received.length >= expected) allDone()
      },
      {
        mode,
        backoff: { baseMs: 100, capMs: 1_000 },
        onRejected: (r) => rejected.push(`${r.messageId ?? '?'}: ${errorText(r.error)}`),
        onError: (e) => streamErrors.push(errorText(e)),
      },
    )
    phase = { mode, expected, received, wire, rejected, streamErrors, handle, client, done }
    const stopped = handle.done.then(
      () => {
        throw new Error(`the ${mode} stream stopped before it was opened`)
      },
      (e: unknown) => {
        throw new Error(`the ${mode} stream failed: ${errorText(e)}`)
      },
    )
    await Promise.race([open, stopped])
  },

  async finish() {
    const p = phase
    if (!p) throw new Error('start() first')
    const failed = p.handle.done.then(
      () => {
        throw new Error(`the ${p.mode} stream stopped early`)
      },
      (e: unknown) => {
        throw new Error(`the ${p.mode} stream failed: ${errorText(e)}`)
      },
    )
    await Promise.race([p.done, failed])
    await p.handle.close()
    await p.handle.done
    phase = undefined
    // Retrieve over plain HTTP after the stream closed: acked messages are gone.
    const left = await p.client.retrieve()
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
      leftInMailbox: left.messages.length + left.rejected.length,
      handleCursor: p.handle.cursor,
    }
  },
}
