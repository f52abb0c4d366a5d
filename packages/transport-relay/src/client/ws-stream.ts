/**
 * The WebSocket connector (PROFILE §9): challenge → auth frame (with the cursor as `after`; no
 * headers on a browser's handshake) → message frames → `ack` frames.
 */
import { AgentMsgError, type ErrorCode, PROFILE, type Signer } from '@agentmsg/core'
import { ERROR_STATUS } from '@agentmsg/core/http'
import { signWsAuth } from '@agentmsg/core/receive'
import { parseFrame } from './envelope.js'
import { readMessage } from './envelope-message.js'
import { protocolError } from './stream.js'
import type { AckFn, Connector } from './stream-types.js'

/** What the client uses of a WebSocket; `pause`, `resume` and `terminate` are `ws`'s (Node). */
export interface WebSocketLike {
  readonly readyState: number
  send(data: string): void
  close(code?: number, reason?: string): void
  addEventListener(type: 'message', listener: (event: { data: unknown }) => void): void
  addEventListener(type: 'close', listener: (e: { code?: number; reason?: string }) => void): void
  addEventListener(type: 'error', listener: (event: { error?: unknown }) => void): void
  pause?(): void
  resume?(): void
  terminate?(): void
}

/** What the client asks of a WebSocket constructor beyond the URL: the largest frame (`ws` takes it). */
export interface WebSocketClientOptions {
  /** Bytes: one event plus its envelope (PROFILE §4). */
  maxPayload: number
}

/**
 * Called as `new WebSocket(url, undefined, { maxPayload })`: `ws` then refuses a frame over the
 * cap (PROFILE §4) as its header arrives; browsers ignore it, and each frame is checked on receipt.
 */
export type WebSocketConstructor = new (
  url: string,
  protocols?: undefined,
  options?: WebSocketClientOptions,
) => WebSocketLike

const OPEN = 1
/**
 * Ack frames get no answer, so one sent shortly before the socket died may never have applied:
 * those sent this long before a close are repeated over HTTP (a 404 there: the frame landed).
 */
const UNCERTAIN_ACK_MS = 10_000
const MAX_UNCERTAIN_ACKS = 1_000
/** How long the relay has to send its challenge after the connection opened (PROFILE §4). */
const CHALLENGE_TIMEOUT_MS = PROFILE.requestTimeoutMs
/**
 * Frames received but not handled yet (UTF-16 code units): past the high mark the socket is
 * paused where it can be (`ws`), past the cap the connection is dropped and resumed from the
 * cursor, so a relay cannot grow the client's memory without bound.
 */
const QUEUE_HIGH = 8 * 1024 * 1024
const QUEUE_LOW = 2 * 1024 * 1024
const QUEUE_CAP = 64 * 1024 * 1024

/** More than `max` bytes of UTF-8? (A code unit is 1 to 3 bytes: encode only when in doubt.) */
function over(s: string, max: number): boolean {
  return s.length > max || (s.length * 3 > max && new TextEncoder().encode(s).length > max)
}

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
  return new AgentMsgError(code, `websocket: ${text}`, { retryAfter })
}

/**
 * One connection per call. Message frames are handled one at a time, in order; when the socket
 * closes, the handler in progress finishes (its ack goes over HTTP) and the frames queued behind
 * it are dropped: the resume cursor brings them back.
 */
export function wsConnector(input: WsConnectorInput): Connector {
  // Acks whose frame may have been lost with its socket: `${from}\n${id}` → [id, from].
  const uncertain = new Map<string, [string, string]>()

  return async (ctx) => {
    // Still unreachable: tried again before the next connection.
    const repeat = async ([key, [id, from]]: [string, [string, string]]) =>
      input.httpAck(id, from).then(
        () => uncertain.delete(key),
        () => {},
      )
    await Promise.all([...uncertain].map(repeat))
    return connectOnce(ctx)
  }

  function connectOnce(ctx: Parameters<Connector>[0]): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      // Open nothing when aborted: `ws` would emit an unhandled 'error' for a socket closed early.
      if (ctx.signal.aborted) return resolve()
      let ws: WebSocketLike
      try {
        const url = new URL(`${input.relayUrl}/relay/ws`.replace(/^https:/, 'wss:')).href
        ws = new input.WebSocket(url, undefined, { maxPayload: PROFILE.eventMaxBytes })
      } catch (e) {
        return reject(e)
      }
      let authed = false
      let stopped = false
      let failure: unknown
      let chain = Promise.resolve()
      let queued = 0
      let paused = false
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
          // After a failure (an oversize frame, which `ws` would read to the end while it waits
          // for the closing handshake) the connection is dropped at once.
          if (error !== undefined && ws.terminate) ws.terminate()
          else ws.close(1000)
        } catch {
          // already closing
        }
        void chain.then(() => (failure === undefined ? resolve() : reject(failure)))
      }
      const onAbort = () => stop()
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

      const onFrame = async (text: string, frame: Record<string, unknown>, message?: string) => {
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
            queued += text.length
            if (queued > QUEUE_CAP) throw protocolError('frames arrived faster than handled')
            if (queued > QUEUE_HIGH && ws.pause && !paused) {
              paused = true
              ws.pause()
            }
            // The message was cut out of the frame and is read on its own (PROFILE §9 envelopes).
            const entry = async () => (message ? readMessage(message) : { value: frame.message })
            chain = chain
              .then(async () => (stopped ? undefined : ctx.deliver(cursor, await entry(), ack)))
              .finally(() => {
                queued -= text.length
                if (paused && queued < QUEUE_LOW && !stopped) {
                  paused = false
                  ws.resume?.()
                }
              })
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

      ws.addEventListener('message', (event) => {
        if (stopped) return
        if (typeof event.data !== 'string') return stop(protocolError('a binary frame'))
        // Where the constructor took no maxPayload (browsers), the cap is checked on receipt.
        if (over(event.data, PROFILE.eventMaxBytes)) {
          return stop(protocolError(`a frame over ${PROFILE.eventMaxBytes} bytes`))
        }
        let parsed: ReturnType<typeof parseFrame>
        try {
          parsed = parseFrame(event.data)
        } catch (e) {
          return stop(protocolError(`a frame that is not I-JSON: ${(e as Error).message}`))
        }
        onFrame(event.data, parsed.frame, parsed.message).catch((e: unknown) => stop(e))
      })
      ws.addEventListener('error', (event) => {
        const detail = event.error instanceof Error ? event.error.message : 'connection failed'
        stop(protocolError(`websocket error: ${detail}`))
      })
      ws.addEventListener('close', (event) => {
        // After auth, and without an error frame: a plain disconnect.
        const early = `websocket closed before auth (${event.code ?? ''} ${event.reason ?? ''})`
        stop(authed ? undefined : protocolError(early))
      })
    })
  }
}
