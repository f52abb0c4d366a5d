/**
 * What the relay attack tests share (issue 9: quotas, duplicates, topics, streams): a clock the
 * test moves (the only mock allowed), publishes from a chosen loopback source address, and
 * messages of a chosen size.
 */
import { request as httpsRequest } from 'node:https'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { type FixtureAgent, signedMessage } from '@agentmsg/conformance'
import type { Message } from '@agentmsg/core'

/** A clock that moves only when told: token buckets refill only when the test says so. */
export interface TestClock {
  now: () => number
  advance(ms: number): void
}

export function testClock(start = Date.now()): TestClock {
  let t = start
  return { now: () => t, advance: (ms) => void (t += ms) }
}

/** Run a full garbage collection (for memory bounds measured in this process). */
export const gc = (() => {
  setFlagsFromString('--expose-gc')
  return runInNewContext('gc') as () => void
})()

/** The status and JSON body of a reply. */
export interface RawReply {
  status: number
  retryAfter: string | undefined
  body: { code?: string; message?: string; status?: string }
}

/** POST a message to `<relay>/relay/publish` from `localAddress` (another client address). */
export function publishFrom(
  relayUrl: string,
  ca: string,
  message: unknown,
  localAddress: string,
): Promise<RawReply> {
  const body = Buffer.from(JSON.stringify(message))
  return new Promise((resolve, reject) => {
    const req = httpsRequest(`${relayUrl}/relay/publish`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': String(body.length) },
      ca,
      agent: false,
      localAddress,
    })
    req.on('response', (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => {
        const retryAfter = res.headers['retry-after']
        resolve({
          status: res.statusCode ?? 0,
          retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter,
          body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as RawReply['body'],
        })
      })
    })
    req.on('error', reject)
    req.end(body)
  })
}

/** A signed message to `to`, dated and signed at `clock`'s time; `bytes` of text when given. */
export function clockedMessage(
  from: FixtureAgent,
  to: string | { topic: string },
  clock: TestClock,
  bytes?: number,
): Promise<Message> {
  const text = bytes === undefined ? {} : { text: 'x'.repeat(bytes) }
  return signedMessage(from, to, { ...text, date: clock.now() }, { created: clock.now() })
}
