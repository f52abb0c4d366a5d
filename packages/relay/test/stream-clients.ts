/**
 * Stream clients that never read, for the stream attack tests (PROFILE §9 "Streams per client
 * address, and their memory"): an SSE request or a WebSocket from a chosen loopback source
 * address, each on a connection of its own, left unread once open.
 */
import type { IncomingMessage } from 'node:http'
import { request as httpsRequest } from 'node:https'
import type { FixtureAgent } from '@agentmsg/conformance'
import { signRequest, signWsAuth } from '@agentmsg/core/receive'
import { WebSocket } from 'ws'

/** How a stream request ended up: open (unread), or refused with a status (close code). */
export interface StreamOutcome {
  /** 200, or the refusal's status; a WebSocket: 200 once a message frame came, else its close code. */
  status: number
  retryAfter?: string
  code?: string
  /**
   * Resolves when the connection has closed. An unread client does not see the relay cut it
   * until it reads again: see `readToEnd`.
   */
  closed: Promise<void>
  /** Read on until the connection closes: the messages received over the whole stream. */
  readToEnd(): Promise<number>
  /** Close it from the client side. */
  end(): void
  /** An open SSE stream's body, to read when the test wants to. */
  body?: IncomingMessage
}

/** `GET /relay/stream?agent=` signed as `agent`, from `localAddress`; its body left unread. */
export async function sseFrom(
  base: string,
  ca: string,
  agent: FixtureAgent,
  localAddress = '127.0.0.1',
): Promise<StreamOutcome> {
  const url = `${base}/relay/stream?agent=${encodeURIComponent(agent.id)}`
  const headers = await signRequest({
    method: 'GET',
    url,
    signer: agent.signer,
    created: Math.floor(Date.now() / 1000),
  })
  const req = httpsRequest(url, { headers, ca, agent: false, localAddress })
  const closed = new Promise<void>((resolve) => req.on('close', () => resolve()))
  const res = await new Promise<IncomingMessage>((resolve, reject) => {
    req.on('response', resolve)
    req.on('error', reject)
    req.end()
  })
  res.on('error', () => undefined)
  const end = () => void req.destroy()
  const readToEnd = async () => {
    let text = ''
    res.on('data', (chunk: Buffer) => void (text += String(chunk)))
    res.resume()
    await closed
    return text.split('\nevent: message\n').length - 1
  }
  if (res.statusCode === 200) return { status: 200, closed, end, readToEnd, body: res }
  const chunks: Buffer[] = []
  for await (const chunk of res) chunks.push(chunk as Buffer)
  end()
  const { code } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { code?: string }
  const { statusCode: status = 0, headers: h } = res
  return { status, retryAfter: h['retry-after'], code, closed, end, readToEnd }
}

/**
 * `/relay/ws` from `localAddress`, authenticated as `agent`, paused (unread) at its first
 * message frame: status 200 then; a refusal's close code (1013) with its error frame's code.
 * The agent's mailbox must hold a message, so an open stream shows itself with a frame.
 */
export function wsFrom(
  base: string,
  ca: string,
  agent: FixtureAgent,
  localAddress = '127.0.0.1',
): Promise<StreamOutcome> {
  const ws = new WebSocket(`${base.replace(/^https/, 'wss')}/relay/ws`, { ca, localAddress })
  const closed = new Promise<void>((resolve) => ws.on('close', () => resolve()))
  const end = () => ws.terminate()
  let messages = 0
  const readToEnd = () => (ws.resume(), closed.then(() => messages))
  return new Promise((resolve, reject) => {
    let code: string | undefined
    ws.on('error', reject)
    ws.on('close', (status) => resolve({ status, code, closed, end, readToEnd }))
    ws.on('message', (data) => {
      const frame = JSON.parse(String(data)) as { type: string; nonce?: string; code?: string }
      if (frame.type === 'error') code = frame.code
      if (frame.type === 'message' && messages++ === 0) {
        ws.pause()
        resolve({ status: 200, closed, end, readToEnd })
      }
      if (frame.type !== 'challenge') return
      const auth = { relayBaseUrl: base, nonce: frame.nonce!, signer: agent.signer }
      signWsAuth({ ...auth, agent: agent.id }).then((f) => ws.send(JSON.stringify(f)), reject)
    })
  })
}

/** Run `task(i)` for i < `count`, `concurrency` at a time; the results in order. */
export async function inBatches<T>(
  count: number,
  concurrency: number,
  task: (i: number) => Promise<T>,
): Promise<T[]> {
  const out: T[] = []
  for (let i = 0; i < count; i += concurrency) {
    const n = Math.min(concurrency, count - i)
    out.push(...(await Promise.all(Array.from({ length: n }, (_, k) => task(i + k)))))
  }
  return out
}
