/**
 * Attack (issue 9, item 19): a validly signed message whose `sequence` is written `1.0`, `1e0`,
 * … JCS prints those as `1`, so the signature made over `"sequence":1` verifies, yet a reader
 * with an integer type sees a float. PROFILE §1: integer fields are written without fraction
 * or exponent → 400 `invalid_format`. Against a real inbox on loopback, default settings.
 */
import { createServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { fixtureAgent, signedMessage } from '@agentmsg/conformance'
import { createAddressPolicy } from '@agentmsg/core/server'
import { afterEach, describe, expect, it } from 'vitest'
import { createNodeIdentityFetcher } from './identity-helpers.js'
import { post, startInbox, stopInboxes, until } from './inbox-helpers.js'
import { testCertificate } from './tls.js'

afterEach(stopInboxes)

/** The message's JSON with the top-level `sequence` literal replaced by `literal`. */
function withSequence(text: string, literal: string): string {
  expect(text.split('"sequence":1,').length).toBe(2)
  return text.replace('"sequence":1,', `"sequence":${literal},`)
}

describe('attack: integer fields written with a fraction or exponent (inbox)', () => {
  it.each(['1.0', '1e0', '1E0', '10e-1'])('sequence written %s → 400 invalid_format', async (n) => {
    const inbox = await startInbox()
    const m = await signedMessage(await fixtureAgent(), inbox.agentId, { sequence: 1 })
    const res = await post(inbox.inboxUrl, withSequence(JSON.stringify(m), n))
    expect(res.status).toBe(400)
    expect(res.json.code).toBe('invalid_format')
    expect(res.json.message).toMatch(/^sequence: /)
    expect(res.json.message).toContain(`${n} is not an integer`)
    expect(inbox.received).toEqual([])
    // The same signed message written plainly is accepted: only the literal was refused.
    expect((await post(inbox.inboxUrl, JSON.stringify(m))).status).toBe(202)
    await until(() => inbox.received.length === 1)
  })

  it('ttl_seconds and auth_level are integer fields too', async () => {
    const inbox = await startInbox()
    const alice = await fixtureAgent()
    const m = await signedMessage(alice, inbox.agentId, { ttlSeconds: 3600, authLevel: 0 })
    const text = JSON.stringify(m)
    for (const [plain, bad, field] of [
      ['"ttl_seconds":3600', '"ttl_seconds":3.6e3', 'ttl_seconds'],
      ['"auth_level":0', '"auth_level":0.0', 'auth_level'],
    ] as const) {
      expect(text).toContain(plain)
      const res = await post(inbox.inboxUrl, text.replace(plain, bad))
      expect([res.status, res.json.code]).toEqual([400, 'invalid_format'])
      expect(res.json.message).toMatch(new RegExp(`^${field}: `))
    }
    expect(inbox.received).toEqual([])
  })

  it('a 1.0 inside body data is fine, and the message is accepted', async () => {
    const inbox = await startInbox()
    const m = await signedMessage(await fixtureAgent(), inbox.agentId, {
      sequence: 1,
      parts: [{ type: 'data', data: { sequence: 1, n: 2 } }],
    })
    const text = JSON.stringify(m)
    const data = '{"sequence":1,"n":2}'
    expect(text).toContain(data)
    const res = await post(inbox.inboxUrl, text.replace(data, '{"sequence":1.0,"n":2e0}'))
    expect(res.status).toBe(202)
    await until(() => inbox.received.length === 1)
    expect(inbox.received.map((r) => r.message.message_id)).toEqual([m.message_id])
  })
})

describe('attack: an identity document with agentmsg written 5.0', () => {
  it('is not a document (not_found naming agentmsg); written 5 it is', async () => {
    const { cert, key, ca } = await testCertificate()
    let body = ''
    const server = createServer({ cert, key }, (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' }).end(body)
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    try {
      const origin = `https://127.0.0.1:${(server.address() as AddressInfo).port}`
      const fetchIdentity = createNodeIdentityFetcher({
        ca,
        addressPolicy: createAddressPolicy({ allow: ['127.0.0.1'] }),
      })
      const agentId = `${origin}/agents/eve`
      for (const n of ['5.0', '5e0', '50E-1']) {
        body = `{"agentmsg":${n},"agent_id":"${agentId}"}`
        const got = await fetchIdentity(agentId)
        expect(got.status).toBe('not_found')
        expect(got.status === 'not_found' && got.reason).toMatch(/agentmsg: .* is not an integer/)
      }
      body = `{"agentmsg":5,"agent_id":"${agentId}"}`
      expect(await fetchIdentity(agentId)).toMatchObject({
        status: 'ok',
        document: { agentmsg: 5 },
      })
    } finally {
      server.closeAllConnections()
      await new Promise<void>((r) => server.close(() => r()))
    }
  })
})
