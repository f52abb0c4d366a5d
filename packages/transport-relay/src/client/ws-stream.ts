/**
 * The WebSocket connector (PROFILE §9 `GET /relay/ws`): challenge → signed auth frame (with the
 * resume cursor as `after`) → message frames → `ack` frames. Auth is in the first frame because
 * browsers cannot put headers on a WebSocket handshake.
 */
import {
  AgentMsgError,
  ERROR_STATUS,
  parseStrictJson,
  type ErrorCode,
  type Signer,
} from '@agentmsg/core'
import { signWsAuth } from '../ws-auth.js'
import { protocolError, type AckFn, type Connector } from './stream.js'

/** The part of the WebSocket API the client uses (browsers' global and `ws` both have it). */
export interface WebSocketLike {
  readonly readyState: number
  send(data: string): void
  close(code?: number, reason?: string): void
  addEventListener(
    type: 'open' | 'message' | 'close' | 'error',
    listener: (event: any) => void,
  ): void
}

/**
 * A WebSocket constructor: the global `WebSocket`, `ws`'s, or a wrapper. On Node a relay with a
 * development certificate needs the CA passed to `ws`:
 *
 * @example
 * import { WebSocket } from 'ws'
 * class DevWebSocket extends WebSocket {
 *   constructor(url: string) { super(url, { ca: devCert.cert }) }
 * }
 */
export type WebSocketConstructor = new (url: string) => WebSocketLike

const OPEN = 1
/**
 * Ack frames get no answer, so one sent shortly before the socket died may never have been
 * applied. Those sent within this window before a close are repeated over HTTP (a 404 there
 * just means the frame did land).
 */
const UNCERTAIN_ACK_MS = 10_000
const MAX_UNCERTAIN_ACKS = 1_000
/** How long the relay has to send its challenge after the connection opened. */
const CHALLENGE_TIMEOUT_MS = 30_000

/** What {@link wsConnector} needs. */
export interface WsConnectorInput {
  relayUrl: string
  agent: string
  signer: Signer
  WebSocket: WebSocketConstructor
  /** The HTTP acknowledgement, used when the socket is gone by the time a handler finished. */
  httpAck: AckFn
}

/** The relay's `{type:"error", code, message}` frame as an error (4xx codes are fatal). */
function frameError(frame: Record<string, unknown>): AgentMsgError {
  const code =
    typeof frame.code === 'string' && Object.hasOwn(ERROR_STATUS, frame.code)
      ? (frame.code as ErrorCode)
      : 'unavailable'
  const text = typeof frame.message === 'string' ? frame.message : 'the relay closed the stream'
  const retryAfter = typeof frame.retry_after === 'number' ? frame.retry_after : undefined
  return new AgentMsgError(code, `websocket: ${text}`, {
    ...(retryAfter !== undefined ? { retryAfter } : {}),
  })
}

/** The WebSocket URL of a relay: `wss:` + base URL + `/relay/ws`. */
export function relayWebSocketUrl(relayUrl: string): string {
  return new URL(`${relayUrl}/relay/ws`.replace(/^https:/, 'wss:')).href
}

/**
 * One WebSocket connection per call. Message frames are handled one at a time in arrival
 * order; when the socket closes, the handler in progress finishes (its ack then goes over HTTP)
 * and the frames queued behind it are dropped — the resume cursor brings them back.
 */
export function wsConnector(input: WsConnectorInput): Connector {
  // Acks whose frame may have been lost with its socket: `${from}\n${id}` → [id, from].
  const uncertain = new Map<string, [string, string]>()

  const repeatUncertainAcks = async () => {
    await Promise.all(
      [...uncertain].map(async ([key, [id, from]]) => {
        try {
          await input.httpAck(id, from)
          uncertain.delete(key)
        } catch {
          // still unreachable: try again before the next connection
        }
      }),
    )
  }

  return async (ctx) => {
    if (uncertain.size > 0) await repeatUncertainAcks()
    return connectOnce(ctx)
  }

  function connectOnce(ctx: Parameters<Connector>[0]): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let ws: WebSocketLike
      try {
        ws = new input.WebSocket(relayWebSocketUrl(input.relayUrl))
      } catch (e) {
        reject(e)
        return
      }
      let authed = false
      let stopped = false
      let failure: unknown
      let chain = Promise.resolve()
      const sentAcks: Array<[number, string, string]> = []
      const timer = setTimeout(
        () => stop(protocolError(`no challenge within ${CHALLENGE_TIMEOUT_MS} ms`)),
        CHALLENGE_TIMEOUT_MS,
      )

      const stop = (error?: unknown) => {
        if (stopped) return
        stopped = true
        failure = error
        clearTimeout(timer)
        const since = Date.now() - UNCERTAIN_ACK_MS
        for (const [at, id, from] of sentAcks) {
          if (at >= since && uncertain.size < MAX_UNCERTAIN_ACKS)
            uncertain.set(`${from}\n${id}`, [id, from])
        }
        ctx.signal.removeEventListener('abort', onAbort)
        try {
          ws.close(1000)
        } catch {
          // already closing
        }
        void chain.then(() => (failure === undefined ? resolve() : reject(failure)))
      }
      const onAbort = () => stop()
      if (ctx.signal.aborted) return stop()
      ctx.signal.addEventListener('abort', onAbort, { once: true })

      const ack: AckFn = async (messageId, from) => {
        if (!stopped && ws.readyState === OPEN) {
          ws.send(JSON.stringify({ type: 'ack', message_id: messageId, from }))
          sentAcks.push([Date.now(), messageId, from])
          if (sentAcks.length > MAX_UNCERTAIN_ACKS) sentAcks.shift()
          return
        }
        await input.httpAck(messageId, from)
      }

      const onFrame = async (frame: Record<string, unknown>) => {
        switch (frame.type) {
          case 'challenge': {
            if (authed || typeof frame.nonce !== 'string')
              throw protocolError('unexpected challenge')
            authed = true
            clearTimeout(timer)
            const auth = await signWsAuth({
              relayBaseUrl: input.relayUrl,
              nonce: frame.nonce,
              signer: input.signer,
              agent: input.agent,
              ...(ctx.after !== undefined ? { after: ctx.after } : {}),
            })
            if (!stopped) ws.send(JSON.stringify(auth))
            return
          }
          case 'message': {
            if (!authed) throw protocolError('a message before the challenge')
            const cursor = typeof frame.cursor === 'string' ? frame.cursor : undefined
            const raw = frame.message
            chain = chain
              .then(() => (stopped ? undefined : ctx.deliver(cursor, raw, ack)))
              .catch((e: unknown) => stop(e))
            return
          }
          case 'error':
            throw frameError(frame)
          default:
            // Frame types of later profiles are ignored.
            return
        }
      }

      ws.addEventListener('message', (event: { data: unknown }) => {
        if (stopped) return
        if (typeof event.data !== 'string') return stop(protocolError('a binary frame'))
        let frame: Record<string, unknown>
        try {
          frame = parseStrictJson(event.data) as Record<string, unknown>
        } catch (e) {
          return stop(protocolError(`a frame that is not I-JSON: ${(e as Error).message}`))
        }
        onFrame(frame).catch((e: unknown) => stop(e))
      })
      ws.addEventListener('error', (event: { message?: unknown; error?: unknown }) => {
        const detail = event.error instanceof Error ? event.error.message : 'connection failed'
        stop(protocolError(`websocket error: ${detail}`))
      })
      ws.addEventListener('close', (event: { code?: number; reason?: string }) => {
        // A close after we authenticated and without an error frame is a plain disconnect.
        stop(
          authed
            ? undefined
            : protocolError(
                `websocket closed before auth (${event.code ?? ''} ${event.reason ?? ''})`,
              ),
        )
      })
    })
  }
}
