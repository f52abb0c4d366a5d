/**
 * The SSE connector (PROFILE §9 `GET /relay/stream`). Browsers cannot put headers on an
 * `EventSource` (whatwg/html#2177), and this request needs signature headers, so the stream is
 * read with `fetch` and a byte-level parser (./sse-parser.ts) that caps each event at
 * 1 MiB + 64 KiB (PROFILE §4); an idle watchdog replaces an overall timeout.
 */

import type { Signer } from '@agentmsg/core'
import { signRequest } from '@agentmsg/core/http'
import { readMessageAsync } from './envelope-message.js'
import { errorFromResponse, MAX_EVENT_BYTES, relayEndpoint, relayFetch } from './http.js'
import { SseEventTooLarge, SseParser } from './sse-parser.js'
import { protocolError } from './stream.js'
import type { Connector } from './stream-types.js'

/** What {@link sseConnector} needs. */
export interface SseConnectorInput {
  relayUrl: string
  agent: string
  signer: Signer
  fetch: typeof fetch
  /** Nothing at all for this long (not even a keep-alive comment): reconnect. */
  idleTimeoutMs: number
  /** Largest event, in bytes. @default MAX_EVENT_BYTES */
  maxEventBytes?: number
}

/**
 * One SSE connection per call: signed GET with `after` and `Last-Event-ID` set to the resume
 * cursor (the relay lets `Last-Event-ID` win; both are sent so a proxy that drops the header
 * still resumes), then events in order, each completed before the next chunk is read — that is
 * the back-pressure on the relay. Entries are acknowledged in the stream's batches.
 */
export function sseConnector(input: SseConnectorInput): Connector {
  const maxEventBytes = input.maxEventBytes ?? MAX_EVENT_BYTES
  return async (ctx) => {
    const url = relayEndpoint(input.relayUrl, '/relay/stream', {
      agent: input.agent,
      after: ctx.after,
    })
    const what = `stream from ${input.relayUrl}`
    const local = new AbortController()
    const onAbort = () => local.abort(ctx.signal.reason)
    ctx.signal.addEventListener('abort', onAbort, { once: true })
    let idle: ReturnType<typeof setTimeout> | undefined
    const watch = () => {
      clearTimeout(idle)
      idle = setTimeout(
        () => local.abort(protocolError(`no data for ${input.idleTimeoutMs} ms`)),
        input.idleTimeoutMs,
      )
    }
    // Our idle timer, not the caller, aborted: report why.
    const why = (e: unknown) =>
      local.signal.aborted && !ctx.signal.aborted ? local.signal.reason : e
    try {
      const headers: Record<string, string> = {
        Accept: 'text/event-stream',
        ...(await signRequest({ method: 'GET', url, signer: input.signer })),
      }
      if (ctx.after !== undefined) headers['Last-Event-ID'] = ctx.after
      watch()
      const res = await relayFetch(
        input.fetch,
        url,
        { method: 'GET', headers, signal: local.signal },
        what,
      ).catch((e: unknown) => {
        throw why(e)
      })
      if (!res.ok) throw await errorFromResponse(res, what, local.signal)
      const type = res.headers.get('content-type') ?? ''
      if (!/^text\/event-stream\b/i.test(type) || res.body === null) {
        await res.body?.cancel().catch(() => {})
        throw protocolError(`expected text/event-stream, got ${type || 'no body type'}`)
      }

      const parser = new SseParser(maxEventBytes)
      const reader = res.body.getReader()
      try {
        for (;;) {
          let chunk: ReadableStreamReadResult<Uint8Array>
          try {
            chunk = await reader.read()
          } catch (e) {
            throw why(e)
          }
          if (chunk.done) return
          watch()
          let events: ReturnType<SseParser['feed']>
          try {
            events = parser.feed(chunk.value)
          } catch (e) {
            // Dropped at the cap: the rest of the event is never read (PROFILE §4).
            if (e instanceof SseEventTooLarge) throw protocolError(`${what}: ${e.message}`)
            throw e
          }
          for (const event of events) {
            if (event.event !== undefined && event.event !== 'message') continue
            // The handler may take its time: the idle timer waits with it.
            clearTimeout(idle)
            // SSE data is one message: strict UTF-8 and I-JSON from its own top level, or
            // handed over as its text for the receive pipeline to refuse (PROFILE §9).
            await ctx.deliver(event.id || undefined, await readMessageAsync(event.data), 'batch')
            if (ctx.signal.aborted) return
            watch()
          }
        }
      } finally {
        reader.cancel().catch(() => {})
      }
    } finally {
      clearTimeout(idle)
      ctx.signal.removeEventListener('abort', onAbort)
      local.abort()
    }
  }
}
