/**
 * `GET /relay/ws` (PROFILE §9) over the `ws` package, on the HTTPS server's `upgrade` event.
 * Relay → `{type:"challenge",nonce}`; the client's first frame must be a valid `{type:"auth",…}`
 * within `authTimeoutMs`; then the mailbox after `after` as `{type:"message",cursor,message}`;
 * `{type:"ack",message_id,from}` frames delete. A stream over a cap of PROFILE §9 (per agent,
 * per client address, the relay's unsent bytes) is closed after authentication with 1013 (try
 * again later). A connection whose frames make no progress for `stallTimeoutMs` is dropped;
 * the client resumes.
 */
import type { IncomingMessage } from 'node:http'
import type { Duplex } from 'node:stream'
import { isAgentMsgError, PROFILE, parseAgentId } from '@agentmsg/core'
import { createChallenge, verifyWsAuth } from '@agentmsg/core/server'
import { WebSocket, WebSocketServer } from 'ws'
import { ackEntry } from './context.js'
import type { Feed, FeedSink } from './feed.js'
import { within } from './health.js'
import { codeStatus, knownCode, reportRefused } from './relay-report.js'
import type { StreamSlot } from './streams.js'
import type { RelayObserver, RelayServerHandler } from './types.js'

export interface RelayWebSocketOptions {
  /** Time for the client's auth frame. @default 10_000 */
  authTimeoutMs?: number
  /** A connection whose frames wait this long without progress is dropped. @default 60_000 */
  stallTimeoutMs?: number
  /** Largest frame accepted from a client. @default 64 KiB */
  maxPayload?: number
  now?: () => number
  onError?: (error: unknown) => void
  observer?: RelayObserver
  /** On `close()`, the time for the closing handshake (1012) before a cut. @default 1000 */
  closeGraceMs?: number
}

export interface RelayWebSocket {
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void
  /** Close every connection and the server. */
  close(): Promise<void>
}

// Close codes (RFC 6455 registry); 1012: the relay is restarting, reconnect.
const POLICY = 1008
const INTERNAL = 1011
const SERVICE_RESTART = 1012
const TRY_AGAIN_LATER = 1013

/**
 * A feed's sink on a socket (PROFILE §9): ready once the socket took every frame sent (their
 * write callbacks came), so a stream holds at most a page unsent; cut when frames wait
 * `stallTimeoutMs` without one of them being taken. `progress` is also the socket's 'close'
 * (called by the connection's own listener: one listener less per idle stream).
 */
function wsSink(ws: WebSocket, stallTimeoutMs: number, slot: StreamSlot) {
  let pending = 0
  let stall: ReturnType<typeof setTimeout> | undefined
  let wake: ((ok: boolean) => void) | undefined
  const open = () => ws.readyState === WebSocket.OPEN
  // A frame taken, or the socket gone: the stall timer restarts while frames still wait.
  const progress = () => {
    clearTimeout(stall)
    const waits = pending > 0 && open()
    stall = waits ? setTimeout(() => ws.terminate(), stallTimeoutMs).unref() : undefined
    if (!waits) wake?.(open())
  }
  const sink: FeedSink = {
    send(entry) {
      if (!open()) return
      const frame = `{"type":"message","cursor":${JSON.stringify(entry.cursor)},"message":${entry.json}}`
      const bytes = Buffer.byteLength(frame)
      pending += bytes
      slot.unsent(bytes)
      if (stall === undefined) progress()
      ws.send(frame, () => {
        pending -= bytes
        slot.unsent(-bytes)
        progress()
      })
    },
    ready: () =>
      pending === 0 || !open()
        ? Promise.resolve(open())
        : new Promise<boolean>((resolve) => (wake = resolve)),
  }
  return { sink, progress }
}

const ignore = () => undefined

/**
 * The WebSocket endpoint for `handler`: pass it the server's `upgrade` events for
 * `{basePath}/relay/ws` (`serveRelay` does; so does an application mounting the handler).
 */
export function createRelayWebSocket(
  handler: RelayServerHandler,
  options: RelayWebSocketOptions = {},
): RelayWebSocket {
  const maxPayload = options.maxPayload ?? PROFILE.replyMaxBytes
  const wss = new WebSocketServer({ noServer: true, maxPayload })
  const onError =
    options.onError ?? ((error: unknown) => console.error('agentmsg relay ws:', error))
  const now = options.now ?? Date.now
  const stallTimeoutMs = options.stallTimeoutMs ?? PROFILE.streamStallMs
  const closeGraceMs = options.closeGraceMs ?? 1000
  const { observer } = options
  const send = (ws: WebSocket, frame: object) => ws.send(JSON.stringify(frame))

  /** A connection from the client-address `bucket` (for reports). */
  const connection = (ws: WebSocket, bucket: string | undefined) => {
    const report = (code: string, scope?: 'streams') => {
      if (observer === undefined) return
      const known = knownCode(code)
      const refused = { code: known, status: codeStatus(known) ?? 500, route: 'ws', method: 'GET' }
      reportRefused(observer, { ...refused, ...(bucket !== undefined && { bucket }) }, scope)
    }
    let feed: Feed | undefined
    let release: (() => void) | undefined
    let gone: (() => void) | undefined
    let agent: string | undefined
    let state: 'auth' | 'checking' | 'open' = 'auth'
    const untrack = handler.track(() => {
      ws.close(SERVICE_RESTART, 'relay restarting')
      setTimeout(() => ws.terminate(), closeGraceMs).unref()
    })
    // The nonce and the auth timer are dropped once authenticated: an idle stream keeps neither.
    let { nonce } = createChallenge()
    send(ws, { type: 'challenge', nonce })
    let timer: ReturnType<typeof setTimeout> | undefined = setTimeout(() => {
      report('unauthorized')
      ws.close(POLICY, 'auth timeout')
    }, options.authTimeoutMs ?? 10_000).unref()
    const refuse = (code: string, message: string) => {
      if (ws.readyState !== WebSocket.OPEN) return
      report(code)
      send(ws, { type: 'error', code, message })
      ws.close(POLICY, code)
    }
    const open = (verified: { agent: string; after?: string }) => {
      clearTimeout(timer)
      timer = undefined
      if (ws.readyState !== WebSocket.OPEN) return
      const { kind } = parseAgentId(verified.agent)
      if (kind !== 'did:key' && kind !== 'url') {
        return refuse('invalid_format', 'mailboxes exist only for did:key and URL agents')
      }
      const slot = handler.claimStream(verified.agent, 'ws', bucket)
      if (!('release' in slot)) {
        report(slot.code, 'streams')
        send(ws, { type: 'error', code: slot.code, message: slot.message })
        return ws.close(TRY_AGAIN_LATER, slot.code)
      }
      release = slot.release
      agent = verified.agent
      state = 'open'
      const { sink, progress } = wsSink(ws, stallTimeoutMs, slot)
      gone = progress
      feed = handler.openFeed(agent, verified.after, sink, (error) => {
        if (error instanceof RangeError) {
          refuse('invalid_format', 'after: is not a cursor of this relay')
        } else if (ws.readyState === WebSocket.OPEN) ws.close(INTERNAL, 'feed ended')
      })
    }

    ws.on('message', (data, isBinary) => {
      if (isBinary) return refuse('invalid_format', 'text frames only')
      // One Buffer per message: the server's binaryType is the default, 'nodebuffer'.
      const text = String(data)
      if (state === 'checking')
        return refuse('invalid_format', 'wait for the answer to the auth frame')
      if (state === 'auth') {
        state = 'checking'
        const auth = { frame: text, relayBaseUrl: handler.baseUrl, nonce, now: now() }
        nonce = ''
        verifyWsAuth({ ...auth, resolver: handler.resolver }).then(open, (error: unknown) => {
          if (isAgentMsgError(error)) return refuse(error.code, error.message)
          onError(error)
          refuse('internal_error', 'internal error')
        })
        return
      }
      // Open: ack frames.
      let f: { type?: unknown; message_id?: unknown; from?: unknown } | null
      try {
        f = JSON.parse(text)
      } catch {
        return refuse('invalid_format', 'frames are JSON objects')
      }
      if (f?.type !== 'ack') return
      let ack: ReturnType<typeof ackEntry>
      try {
        ack = ackEntry(f.message_id, f.from, '', true)
      } catch {
        return refuse('invalid_format', 'an ack carries a message_id and from (PROFILE §9)')
      }
      handler.ack(agent!, ack.messageId, ack.from).catch(onError)
    })
    ws.on('error', ignore)
    ws.on('close', () => {
      clearTimeout(timer)
      feed?.close()
      release?.()
      untrack()
      gone?.()
    })
  }

  return {
    handleUpgrade(req, socket, head) {
      const v = req.headers['x-forwarded-for']
      const forwarded = v === undefined ? null : Array.isArray(v) ? v.join(', ') : v
      const address = req.socket.remoteAddress
      // A connection already gone has no address: nobody to answer (PROFILE §6 buckets need one).
      if (address === undefined) return void socket.destroy()
      const wait = handler.admit(address, forwarded)
      if (wait > 0) {
        const head429 = `HTTP/1.1 429 Too Many Requests\r\nRetry-After: ${wait}\r\n`
        return void socket.end(`${head429}Content-Length: 0\r\nConnection: close\r\n\r\n`)
      }
      wss.handleUpgrade(req, socket, head, (ws) =>
        connection(ws, handler.bucketOf(address, forwarded)),
      )
    },
    async close() {
      // Sockets the relay's close() did not end are asked to reconnect too, each given
      // `closeGraceMs` for the closing handshake before it is cut.
      const closed = [...wss.clients].map(
        (ws) =>
          new Promise<void>((resolve) => {
            if (ws.readyState === WebSocket.CLOSED) return resolve()
            ws.once('close', () => resolve())
            if (ws.readyState === WebSocket.OPEN) ws.close(SERVICE_RESTART, 'relay restarting')
          }),
      )
      await within(closeGraceMs, () => Promise.all(closed))
      for (const ws of wss.clients) ws.terminate()
      return new Promise((resolve) => wss.close(() => resolve()))
    },
  }
}
