/**
 * `IncomingMessage` → `Request` and answers → `ServerResponse` for the Node adapter, built so
 * that the common case costs little. On Node 20 a web `ReadableStream` costs about 40 µs to
 * build and a `Response` about 60: as much as the whole inbox pipeline apart from the signature
 * check. So the `Request` is lazy: method, url, headers (`get`/`has`), body and signal answer
 * from the `IncomingMessage`, and a real `Request` (or `Headers`) is built only when a handler
 * asks for anything else; core's `readBody` takes the body straight from the `IncomingMessage`
 * (`Symbol.for('agentmsg.body')`) without a web stream; and a handler that answers with core's
 * plain `HttpReply` (`Symbol.for('agentmsg.reply')`, see node-server.ts) has it written as is.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { HttpReply } from '@agentmsg/core/server'
import { bodyChunks, bodyStream } from './node-body.js'

const IN = Symbol('incoming')
const RES = Symbol('response')
const URL_ = Symbol('url')
const MADE = Symbol('made')
/** Where core's `readBody` finds a body it can read without a web stream. */
const BODY = Symbol.for('agentmsg.body')

interface Made {
  headers?: Headers
  body?: ReadableStream<Uint8Array> | null
  signal?: AbortSignal
  request?: Request
}

interface Lazy {
  [IN]: IncomingMessage
  [RES]: ServerResponse
  [URL_]: string
  [MADE]: Made
}

/**
 * A prototype over `base` (`Request.prototype`, `Headers.prototype`) whose members are `own`
 * where given, else answer from the real object `made(this)` builds on first need.
 */
function lazyProto<T extends object>(
  base: T,
  made: (self: never) => T,
  own: PropertyDescriptorMap,
): T {
  for (const key of Reflect.ownKeys(base)) {
    const d = Object.getOwnPropertyDescriptor(base, key)!
    const name = key as keyof T
    if (key === 'constructor' || key in own) continue
    if (d.get === undefined && typeof d.value !== 'function') continue
    own[key] = d.get
      ? {
          get(this: never) {
            return made(this)[name]
          },
        }
      : {
          value(this: never, ...args: unknown[]) {
            const real = made(this)
            return (real[name] as (...a: unknown[]) => unknown).apply(real, args)
          },
        }
  }
  return Object.create(base, own) as T
}

function realHeaders(self: Lazy): Headers {
  const made = self[MADE]
  if (made.headers) return made.headers
  const raw = self[IN].rawHeaders
  made.headers = new Headers()
  for (let i = 0; i < raw.length; i += 2) made.headers.append(raw[i]!, raw[i + 1]!)
  return made.headers
}

// `get` and `has` from the parsed headers; repeated ones joined as `Headers` joins them (a
// doubled Content-Type must not be read as its first copy, which is what `req.headers` keeps).
const HEADERS_PROTO = lazyProto(Headers.prototype, realHeaders, {
  get: {
    value(this: Lazy, name: string) {
      if (this[MADE].headers) return this[MADE].headers.get(name)
      const values = this[IN].headersDistinct[name.toLowerCase()]
      return values === undefined ? null : values.join(', ')
    },
  },
  has: {
    value(this: Lazy, name: string) {
      if (this[MADE].headers) return this[MADE].headers.has(name)
      return this[IN].headersDistinct[name.toLowerCase()] !== undefined
    },
  },
})

function method(this: Lazy): string {
  return this[IN].method ?? 'GET'
}

function headers(this: Lazy): Headers {
  const lazy = Object.create(HEADERS_PROTO) as Lazy
  lazy[IN] = this[IN]
  lazy[MADE] = this[MADE]
  return lazy as unknown as Headers
}

function body(this: Lazy): ReadableStream<Uint8Array> | null {
  const made = this[MADE]
  if (made.body === undefined) {
    const m = this[IN].method
    made.body = m === 'GET' || m === 'HEAD' ? null : bodyStream(this[IN])
  }
  return made.body
}

// Aborts when the client goes away, so long-lived answers (SSE) stop.
function signal(this: Lazy): AbortSignal {
  const made = this[MADE]
  if (made.signal) return made.signal
  const aborter = new AbortController()
  const res = this[RES]
  const onClose = () => {
    if (!res.writableFinished) aborter.abort(new Error('the client closed the connection'))
  }
  if (res.destroyed) onClose()
  else res.once('close', onClose)
  made.signal = aborter.signal
  return made.signal
}

function realRequest(self: Lazy): Request {
  const made = self[MADE]
  if (made.request) return made.request
  const init: RequestInit & { duplex?: 'half' } = {
    method: method.call(self),
    headers: realHeaders(self),
    signal: signal.call(self),
  }
  const stream = body.call(self)
  if (stream) Object.assign(init, { body: stream, duplex: 'half' })
  made.request = new Request(self[URL_], init)
  return made.request
}

const REQUEST_PROTO = lazyProto(Request.prototype, realRequest, {
  method: { get: method },
  url: {
    get(this: Lazy) {
      return this[URL_]
    },
  },
  headers: { get: headers },
  body: { get: body },
  signal: { get: signal },
  // The body for core's readBody, when nobody took it as a stream: `cancel()` pauses the
  // request (the answer then closes the connection) instead of destroying the socket.
  [BODY]: {
    value(this: Lazy) {
      const m = this[IN].method
      if (this[MADE].body !== undefined || m === 'GET' || m === 'HEAD') return undefined
      this[MADE].body = null
      return bodyChunks(this[IN])
    },
  },
})

const HOST = /^[A-Za-z0-9.-]+(?::[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]+\](?::[0-9]{1,5})?$/
// RFC 3986 path and query characters the WHATWG parser leaves as they are, and no `.`/`..`
// segments (a `%` in the path may hide one): such a target is its own serialization.
const PLAIN = /^\/(?!\/)[A-Za-z0-9\-._~!$&()*+,;=:@/]*(?:\?[A-Za-z0-9\-._~!$&()*+,;=:@/?%]*)?$/
const DOT_SEGMENT = /\/\.\.?(?:[/?]|$)/
const origins = new Map<string, string>()

/** The request's URL, serialized as `new Request` would (only its path is used for routing). */
function urlOf(req: IncomingMessage, scheme: string): string {
  const given = req.headers.host
  const key = `${scheme}://${given !== undefined && HOST.test(given) ? given : 'localhost'}`
  let origin = origins.get(key)
  if (origin === undefined) {
    origin = new URL(key).origin
    if (origins.size < 64) origins.set(key, origin)
  }
  // Express's `app.use(path, …)` strips the mount path from `req.url`; the handler routes on
  // the whole path (its `basePath`), which Express keeps as `originalUrl`.
  const target = (req as { originalUrl?: string }).originalUrl ?? req.url ?? '/'
  if (PLAIN.test(target) && !DOT_SEGMENT.test(target)) return origin + target
  return new URL(target, origin).href
}

/** The `Request` a handler is given for `req` (see the module comment). */
export function nodeRequest(req: IncomingMessage, res: ServerResponse, scheme: string): Request {
  const lazy = Object.create(REQUEST_PROTO) as Lazy
  lazy[IN] = req
  lazy[RES] = res
  lazy[URL_] = urlOf(req, scheme)
  lazy[MADE] = {}
  return lazy as unknown as Request
}

/**
 * Write an answer to `res`: a plain reply as it is, a `Response` streamed. When the handler
 * answered before the request body was all in (413, 429, 415, …) the connection closes after
 * the answer rather than read, say, the rest of a 50 MiB upload.
 */
export async function writeAnswer(
  req: IncomingMessage,
  res: ServerResponse,
  answer: Response | HttpReply,
): Promise<void> {
  const close: Record<string, string> = req.complete ? {} : { connection: 'close' }
  if (!(answer instanceof Response)) {
    res.writeHead(answer.status, { ...answer.headers, ...close })
    return void res.end(req.method === 'HEAD' ? undefined : (answer.body ?? undefined))
  }
  const headers: Record<string, string | string[]> = { ...close }
  answer.headers.forEach((value, name) => {
    headers[name] = value
  })
  const cookies = answer.headers.getSetCookie()
  if (cookies.length > 0) headers['set-cookie'] = cookies
  res.writeHead(answer.status, headers)
  if (answer.body === null || req.method === 'HEAD') return void res.end()
  const reader = answer.body.getReader()
  // The client may go away at any time, also while the handler's stream waits for data (SSE):
  // cancelling the reader ends a pending read, and nothing waits for a 'close' already past.
  const onClose = () => void reader.cancel().catch(() => {})
  res.once('close', onClose)
  // A body that errors after the headers is the handler cutting the connection (an SSE stream
  // the client stopped taking, PROFILE §9): at once, also while a write waits for 'drain'.
  const cut = () => void res.destroy()
  reader.closed.catch(cut)
  try {
    for (;;) {
      // The error itself is handled by `cut` above.
      const { done, value } = await reader
        .read()
        .catch(() => ({ done: true as const, value: undefined }))
      if (done || res.destroyed) break
      if (!res.write(value) && !res.destroyed) {
        // Both listeners go once either fires: a long stream (SSE) waits for drain many times.
        await new Promise<void>((resolve) => {
          const done = () => {
            res.off('drain', done)
            res.off('close', done)
            resolve()
          }
          res.once('drain', done)
          res.once('close', done)
        })
      }
      if (res.destroyed) break
    }
  } finally {
    res.off('close', onClose)
    if (res.destroyed) await reader.cancel().catch(() => {})
    else res.end()
  }
}
