/**
 * The SSE connector (PROFILE §9 `GET /relay/stream`): `fetch` and a byte-level parser, since an
 * `EventSource` cannot send the signature headers; an idle watchdog replaces a timeout.
 */
import { PROFILE, type Signer } from '@agentmsg/core'
import { httpRequest } from '@agentmsg/core/http'
import { signRequest } from '@agentmsg/core/receive'
import { readMessage } from './envelope-message.js'
import { relayEndpoint } from './http.js'
import { SseParser } from './sse-parser.js'
import { protocolError } from './stream.js'
import type { Connector } from './stream-types.js'

/** What {@link sseConnector} needs; `idleTimeoutMs`: nothing for this long, not even a comment. */
export interface SseConnectorInput {
  relayUrl: string
  agent: string
  signer: Signer
  fetch: typeof fetch
  idleTimeoutMs: number
}

/**
 * One connection per call: the cursor goes as `after` and `Last-Event-ID` (for proxies that drop
 * the header); each event completes before the next chunk is read (back-pressure on the relay).
 */
export function sseConnector(input: SseConnectorInput): Connector {
  return async (ctx) => {
    const url = relayEndpoint(input.relayUrl, '/relay/stream', {
      agent: input.agent,
      after: ctx.after,
    })
    const what = `stream from ${input.relayUrl}`
    // Aborted by the stream's close, or by the idle watchdog with the reason reported.
    const local = new AbortController()
    const onAbort = () => local.abort(ctx.signal.reason)
    ctx.signal.addEventListener('abort', onAbort, { once: true })
    let idle: ReturnType<typeof setTimeout> | undefined
    const watch = () => {
      clearTimeout(idle)
      const reason = () => protocolError(`no data for ${input.idleTimeoutMs} ms`)
      idle = setTimeout(() => local.abort(reason()), input.idleTimeoutMs)
    }
    try {
      const headers: Record<string, string> = {
        Accept: 'text/event-stream',
        ...(await signRequest({ method: 'GET', url, signer: input.signer })),
      }
      if (ctx.after !== undefined) headers['Last-Event-ID'] = ctx.after
      watch()
      const init = { fetch: input.fetch, headers, timeoutMs: 0, signal: local.signal, what }
      await httpRequest(url, init, async (res) => {
        const type = res.headers.get('content-type') ?? ''
        if (!/^text\/event-stream\b/i.test(type) || res.body === null) {
          await res.body?.cancel().catch(() => {})
          throw protocolError(`expected text/event-stream, got ${type || 'no body type'}`)
        }
        // Dropped at the cap: the rest of the event is never read (PROFILE §4).
        const max = PROFILE.eventMaxBytes
        const parser = new SseParser(max, () =>
          protocolError(`${what}: an event over ${max} bytes`),
        )
        const reader = res.body.getReader()
        try {
          for (;;) {
            const chunk = await reader.read()
            if (chunk.done) return
            watch()
            for (const event of parser.feed(chunk.value)) {
              if (event.event !== undefined && event.event !== 'message') continue
              // The handler may take its time: the watchdog waits with it.
              clearTimeout(idle)
              // One message: strict UTF-8 and I-JSON from its own top level, or its text.
              await ctx.deliver(event.id || undefined, await readMessage(event.data), 'batch')
              if (ctx.signal.aborted) return
              watch()
            }
          }
        } finally {
          reader.cancel().catch(() => {})
        }
      })
    } finally {
      clearTimeout(idle)
      ctx.signal.removeEventListener('abort', onAbort)
      local.abort()
    }
  }
}
