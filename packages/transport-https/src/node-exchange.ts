/**
 * The Node adapter's direct path for handlers made by `createInboxHandler`: the pipeline reads
 * the `IncomingMessage` itself (streamed, counted, never buffered past the cap) and its answer is
 * written straight to the socket, with no `Request`/`Response` objects in between.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { invalidFormat } from '@agentmsg/core/http'
import type { InboxExchange } from './inbox/exchange.js'
import type { HttpReply } from './inbox/responses.js'

/**
 * Read the body of `req`, counting as it streams; stop reading once past `limit` (→ undefined;
 * the answer must close the connection). A body stream that fails is the client's problem
 * (`invalid_format`). Shared with the relay's Node publish path.
 */
export function readNodeBody(req: IncomingMessage, limit: number): Promise<Uint8Array | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let total = 0
    const done = () => {
      req.off('data', onData)
      req.off('end', onEnd)
      req.off('close', onClose)
      req.off('error', onClose)
    }
    const onData = (chunk: Buffer) => {
      total += chunk.length
      if (total > limit) {
        done()
        // Not another byte: the reply closes the connection (see writeReply).
        req.pause()
        resolve(undefined)
        return
      }
      chunks.push(chunk)
    }
    const onEnd = () => {
      done()
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total))
    }
    const onClose = () => {
      if (req.complete) return
      done()
      reject(invalidFormat('the request body could not be read'))
    }
    req.on('data', onData)
    req.on('end', onEnd)
    req.on('close', onClose)
    req.on('error', onClose)
  })
}

// RFC 3986 path characters (no `%`) that the WHATWG parser leaves as they are, and segments
// that are not `.` or `..`: such a target is its own path, no URL parse needed.
const PLAIN_PATH = /^\/(?!\/)[A-Za-z0-9\-._~!$&'()*+,;=:@/]*$/
const DOT_SEGMENT = /\/\.\.?(?:\/|$)/

function pathOf(url: string): string {
  const query = url.indexOf('?')
  const target = query < 0 ? url : url.slice(0, query)
  if (PLAIN_PATH.test(target) && !DOT_SEGMENT.test(target)) return target
  try {
    // The WHATWG parser, as `fetch` uses: both adapters route the same bytes the same way.
    return new URL(url, 'https://localhost').pathname
  } catch {
    return ''
  }
}

export function nodeExchange(req: IncomingMessage): InboxExchange {
  return {
    method: req.method ?? 'GET',
    path: pathOf(req.url ?? '/'),
    header(name) {
      // headersDistinct keeps every copy, joined as web Headers do (a doubled Content-Type
      // must not be read as its first copy).
      const values = req.headersDistinct[name]
      return values === undefined ? null : values.join(', ')
    },
    clientAddress: req.socket.remoteAddress,
    readBody: (limit) => readNodeBody(req, limit),
    discardBody: () => undefined,
  }
}

export function writeReply(req: IncomingMessage, res: ServerResponse, reply: HttpReply): void {
  const headers = req.complete ? reply.headers : { ...reply.headers, connection: 'close' }
  res.writeHead(reply.status, headers)
  res.end(req.method === 'HEAD' ? undefined : (reply.body ?? undefined))
}
