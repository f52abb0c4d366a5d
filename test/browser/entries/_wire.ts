/**
 * Wire recording for `relay-agent.ts`: a `fetch` and a `WebSocket` for the relay transport
 * that pass everything through and note what crossed the wire (which connection carried which
 * message, its cursor, the acknowledgements), since the agent itself does not say.
 */
import type { WebSocketConstructor } from '@agentmsg/transport-relay'

/** What crossed the wire while one phase's agent ran. */
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
  /** The relay's cursor of each message id seen (SSE `id:` / the frame's `cursor`). */
  cursors: Record<string, string>
  /** Message ids acknowledged: `POST /relay/ack` or `DELETE /relay/messages/<id>` (SSE), `ack` frames (WebSocket). */
  acks: string[]
  /** Every other request the agent made (method and path). */
  requests: string[]
}

const ID_RE = /"message_id"\s*:\s*"([^"]+)"/g

function idsIn(text: string): string[] {
  return [...text.matchAll(ID_RE)].map((m) => m[1]!)
}

/** An empty log for one phase. */
export function newWire(): WireLog {
  return {
    sseConnections: 0,
    sseStatuses: [],
    wsConnections: 0,
    wsFrameTypes: [],
    seenOnSse: [],
    seenOnWs: [],
    cursors: {},
    acks: [],
    requests: [],
  }
}

/** `fetch` that records requests and copies what SSE streams carry. */
export function recordingFetch(wire: WireLog, onSseOpen: () => void): typeof fetch {
  return async (input, init) => {
    const request = new Request(input, init)
    const url = new URL(request.url)
    if (url.pathname !== '/relay/stream') {
      const ack = /^\/relay\/messages\/([^/]+)$/.exec(url.pathname)
      if (request.method === 'DELETE' && ack) wire.acks.push(decodeURIComponent(ack[1]!))
      else if (request.method === 'POST' && url.pathname === '/relay/ack') {
        // Batched acknowledgements (PROFILE §9): one request names many entries.
        const body = (await request.clone().json()) as { acks: Array<{ message_id: string }> }
        for (const a of body.acks) wire.acks.push(a.message_id)
      } else wire.requests.push(`${request.method} ${url.pathname}`)
      return fetch(request)
    }
    wire.sseConnections++
    const res = await fetch(request)
    wire.sseStatuses.push(res.status)
    if (!res.ok || !res.body) return res
    onSseOpen()
    const decoder = new TextDecoder()
    let pending = ''
    let cursor: string | undefined
    const tap = new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        pending += decoder.decode(chunk, { stream: true })
        // Complete lines only: an id may straddle two chunks.
        const cut = pending.lastIndexOf('\n')
        if (cut >= 0) {
          for (const line of pending.slice(0, cut).split('\n')) {
            if (line.startsWith('id:')) cursor = line.slice(3).trim()
            if (line.startsWith('data:')) {
              for (const id of idsIn(line)) {
                wire.seenOnSse.push(id)
                if (cursor !== undefined) wire.cursors[id] = cursor
              }
            }
            if (line === '') cursor = undefined
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

/** The browser's WebSocket, recording frames both ways. */
export function recordingWebSocket(wire: WireLog, onAuthSent: () => void): WebSocketConstructor {
  return class extends WebSocket {
    constructor(url: string) {
      super(url)
      wire.wsConnections++
      this.addEventListener('message', (event: MessageEvent) => {
        if (typeof event.data !== 'string') return
        try {
          const frame = JSON.parse(event.data) as { type?: unknown; cursor?: unknown }
          wire.wsFrameTypes.push(String(frame.type))
          if (frame.type === 'message') {
            for (const id of idsIn(event.data)) {
              wire.seenOnWs.push(id)
              if (typeof frame.cursor === 'string') wire.cursors[id] = frame.cursor
            }
          }
        } catch {
          wire.wsFrameTypes.push('(unparsable)')
        }
      })
    }
    override send(data: string): void {
      super.send(data)
      if (/^\{"type":"auth"/.test(data)) onAuthSent()
      if (/^\{"type":"ack"/.test(data)) {
        wire.acks.push(String((JSON.parse(data) as { message_id?: unknown }).message_id))
      }
    }
  } as unknown as WebSocketConstructor
}

/** For the SSE phase: opening a WebSocket there is an error. */
export const forbiddenWebSocket = class {
  constructor(url: string) {
    throw new Error(`the SSE phase must not open a WebSocket (${url})`)
  }
} as unknown as WebSocketConstructor
