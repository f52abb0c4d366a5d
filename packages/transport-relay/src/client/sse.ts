/**
 * The SSE connector (PROFILE §9 `GET /relay/stream`). Browsers cannot put headers on an
 * `EventSource` (whatwg/html#2177), and this request needs signature headers, so the stream is
 * read with `fetch` and `eventsource-parser` — which also works on Node and in workers.
 */
import { parseStrictJson, type Signer } from '@agentmsg/core'
import { createParser, type EventSourceMessage } from 'eventsource-parser'
import { signRequest } from '../http-signature.js'
import { errorFromResponse, relayEndpoint, relayFetch } from './http.js'
import { protocolError, type AckFn, type Connector } from './stream.js'

/** Room for one event holding a 1 MiB message, JSON-escaped (characters). */
const MAX_EVENT_CHARS = 4 * 1024 * 1024

/** What {@link sseConnector} needs. */
export interface SseConnectorInput {
  relayUrl: string
  agent: string
  signer: Signer
  fetch: typeof fetch
  /** Acknowledge over HTTP (`DELETE /relay/messages/{id}`). */
  ack: AckFn
  idleTimeoutMs: number
}

/**
 * One SSE connection per call: signed GET with `after` and `Last-Event-ID` set to the resume
 * cursor (the relay lets `Last-Event-ID` win; both are sent so a proxy that drops the header
 * still resumes), then events in order, each completed before the next chunk is read — that is
 * the back-pressure on the relay.
 */
export function sseConnector(input: SseConnectorInput): Connector {
  return async (ctx) => {
    const url = relayEndpoint(input.relayUrl, '/relay/stream', {
      agent: input.agent,
      after: ctx.after,
    })
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
        `stream from ${input.relayUrl}`,
      ).catch((e: unknown) => {
        // Our idle timer, not the caller, aborted: report why.
        throw local.signal.aborted && !ctx.signal.aborted ? local.signal.reason : e
      })
      if (!res.ok) throw await errorFromResponse(res, `stream from ${input.relayUrl}`)
      const type = res.headers.get('content-type') ?? ''
      if (!/^text\/event-stream\b/i.test(type) || res.body === null) {
        await res.body?.cancel().catch(() => {})
        throw protocolError(`expected text/event-stream, got ${type || 'no body type'}`)
      }

      const events: EventSourceMessage[] = []
      let parseFailure: Error | undefined
      const parser = createParser({
        onEvent: (event) => events.push(event),
        onError: (error) => {
          if (error.type === 'max-buffer-size-exceeded') parseFailure = error
        },
        maxBufferSize: MAX_EVENT_CHARS,
      })
      const reader = res.body.getReader()
      const decoder = new TextDecoder()
      try {
        for (;;) {
          let chunk: ReadableStreamReadResult<Uint8Array>
          try {
            chunk = await reader.read()
          } catch (e) {
            throw local.signal.aborted && !ctx.signal.aborted ? local.signal.reason : e
          }
          if (chunk.done) return
          watch()
          parser.feed(decoder.decode(chunk.value, { stream: true }))
          if (parseFailure) throw protocolError(parseFailure.message)
          while (events.length > 0) {
            const event = events.shift()!
            if (event.event !== undefined && event.event !== 'message') continue
            // The handler may take its time: the idle timer waits with it.
            clearTimeout(idle)
            let raw: unknown
            try {
              raw = parseStrictJson(event.data)
            } catch {
              raw = event.data // refused by verification, reported with the text
            }
            await ctx.deliver(event.id || undefined, raw, input.ack)
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
