/**
 * The relay transport's mailbox listener backs off while a relay cannot open the mailbox, and
 * starts over after a success: a relay that was down for a while and then served the stream is
 * tried again at the first window when it fails later, not at the widest one reached before.
 */
import { AgentMsgError, memoryStorage, type TransportComponents } from '@agentmsg/core'
import { createKeyResolver } from '@agentmsg/core/identity'
import { describe, expect, it } from 'vitest'
import { relayTransport } from '../src/index.js'
import {
  bob,
  cleanups,
  fetchFn,
  json,
  scripted,
  setupScriptedTests,
  until,
} from './client-scripted.js'

setupScriptedTests()

describe('mailbox listener backoff', () => {
  it('resets after a stream that moved the cursor', async () => {
    const FAILURES = 5
    let subscribes = 0
    let streams = 0
    let refusedAt = 0
    let resubscribedAt = 0
    const url = await scripted((req, res) => {
      const path = new URL(req.url!, 'https://relay.test').pathname
      if (req.method === 'POST' && path === '/relay/subscribe') {
        // Down for a while (the backoff widens), then up; the last is the retry after a reset.
        if (++subscribes <= FAILURES) {
          return json(res, 503, { status: 'error', code: 'unavailable', message: 'down' })
        }
        if (subscribes === FAILURES + 2) resubscribedAt = Date.now()
        return json(res, 201, { status: 'subscribed', subscription_id: `s${subscribes}` })
      }
      if (req.method === 'GET' && path === '/relay/stream') {
        if (++streams === 1) {
          // One entry no ack can name: the stream skips it by its cursor, which moves.
          res.writeHead(200, { 'content-type': 'text/event-stream' })
          res.end('id: c1\nevent: message\ndata: {"entry":1}\n\n')
          return
        }
        // The relay forgot the mailbox: the listener opens it again, after a backoff.
        if (streams === 2) refusedAt = Date.now()
        return json(res, 404, { status: 'error', code: 'not_found', message: 'no mailbox' })
      }
      json(res, 404, { status: 'error', code: 'not_found', message: 'no route' })
    })
    const c: TransportComponents = {
      agentId: bob.id,
      signer: bob.signer,
      resolver: createKeyResolver(),
      storage: memoryStorage(),
      relays: [url],
      trusts: () => false,
      identityDocument: () => undefined,
      now: () => Date.now(),
      onError: () => {},
    }
    // Windows of 40, 80, 160, 320, 640 ms, each waited almost in full.
    const backoff = { baseMs: 40, capMs: 60_000, random: () => 0.999 }
    const t = relayTransport({ fetch: fetchFn, streamFetch: fetchFn, backoff }).create(c)
    cleanups.push(() => t.close())
    const received: unknown[] = []
    await t.listen(async (d) => {
      received.push(d.body)
      return { status: 'refused', error: new AgentMsgError('invalid_format', 'no'), retry: false }
    })
    await until(() => resubscribedAt > 0)
    await t.close()
    expect(received).toEqual([{ entry: 1 }])
    expect(streams).toBeGreaterThanOrEqual(2)
    // The first window again (< 40 ms), not the fifth (640 ms) that the failures had reached.
    expect(resubscribedAt - refusedAt).toBeLessThan(300)
  })
})
