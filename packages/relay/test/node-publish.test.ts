/**
 * POST /relay/publish on Node, through the one adapter, answers byte for byte the same with and
 * without a pass-through `intercept` in front: the same requests, raw over TLS, to both.
 */
import { connect } from 'node:tls'
import { fixtureAgent, signedMessage } from '@agentmsg/conformance'
import { describe, expect, it } from 'vitest'
import { startRelay, type TestRelay } from './helpers.js'

/** Send one raw HTTP/1.1 request; the whole answer, its Date header blanked. */
function raw(relay: TestRelay, head: string, body = ''): Promise<string> {
  const { port } = new URL(relay.url)
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port: Number(port), ca: relay.cert.ca })
    const chunks: Buffer[] = []
    socket.on('data', (c: Buffer) => chunks.push(c))
    socket.on('error', reject)
    socket.on('close', () =>
      resolve(
        Buffer.concat(chunks)
          .toString('latin1')
          .replace(/\r\nDate: [^\r]*/, '\r\nDate: -'),
      ),
    )
    socket.on('secureConnect', () => socket.write(`${head}\r\n${body}`))
  })
}

function post(path: string, body: string, headers: Record<string, string> = {}): [string, string] {
  const all: Record<string, string> = {
    host: '127.0.0.1',
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(body)),
    connection: 'close',
    ...headers,
  }
  const lines = Object.entries(all).map(([k, v]) => `${k}: ${v}\r\n`)
  return [`POST ${path} HTTP/1.1\r\n${lines.join('')}`, body]
}

describe('POST /relay/publish on Node', () => {
  it('answers every case byte for byte as the generic adapter', async () => {
    const limits = { perAddress: { perMinute: 1, burst: 10 } }
    // One still clock for both: the Retry-After of the last answer does not depend on timing.
    const at = Date.now()
    const now = () => at
    const fast = await startRelay({ limits, now })
    const generic = await startRelay({ limits, now, intercept: () => undefined })
    try {
      const alice = await fixtureAgent()
      const bob = await fixtureAgent()
      const carol = await fixtureAgent()
      for (const r of [fast, generic]) await r.client.subscribe(bob)
      const message = JSON.stringify(await signedMessage(alice, bob.id))
      const forged = message.replace(/"sig":"./, (m) =>
        m.endsWith('A') ? `${m.slice(0, -1)}B` : `${m.slice(0, -1)}A`,
      )
      const cases: Array<[string, string]> = [
        post('/relay/publish', message),
        post('/relay/publish', message), // duplicate: 202 again
        post('/relay/publish?x=1', JSON.stringify(await signedMessage(alice, bob.id))),
        post('/relay/publish', message, { 'content-type': 'text/plain' }),
        post('/relay/publish', '{"not":'),
        post('/relay/publish', '{}', { 'content-length': '2000000' }),
        post('/relay/publish', JSON.stringify(await signedMessage(alice, carol.id))), // no mailbox
        post('/relay/publish', forged),
        [`GET /relay/publish HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n`, ''],
        post('/relay/publish', JSON.stringify(await signedMessage(carol, bob.id))),
        post('/relay/publish', JSON.stringify(await signedMessage(bob, bob.id))), // rate limited
      ]
      const statuses: string[] = []
      for (const [head, body] of cases) {
        const a = await raw(fast, head, body)
        const b = await raw(generic, head, body)
        expect(a).toBe(b)
        statuses.push(a.slice(9, 12))
      }
      // Every answer the endpoint gives, the last one past the per-address burst.
      expect(statuses).toEqual([
        '202',
        '202',
        '202',
        '415',
        '400',
        '413',
        '404',
        '401',
        '405',
        '202',
        '429',
      ])
      expect(fast.errors).toEqual([])
      expect(generic.errors).toEqual([])
    } finally {
      await fast.stop()
      await generic.stop()
    }
  })
})
