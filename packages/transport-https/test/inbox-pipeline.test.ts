/**
 * The inbox pipeline of PROFILE §6 through a real HTTPS client and server (127.0.0.1, the test
 * certificate as the only CA): every status row, and the bad-input battery.
 */

import { fixtureAgent, signedMessage } from '@agentmsg/conformance'
import {
  canonicalizeToBytes,
  ed25519Signer,
  generateKeyPair,
  type Message,
  memoryStorage,
} from '@agentmsg/core'
import { afterEach, describe, expect, it } from 'vitest'
import {
  type ClientResponse,
  deferred,
  post,
  send,
  startInbox,
  stopInboxes,
  tableResolver,
  until,
} from './inbox-helpers.js'

afterEach(stopInboxes)

const DAY = 86_400_000

/** The wire error: exactly {status:"error", code, message}, with CORS. */
function expectError(r: ClientResponse, status: number, code: string): void {
  expect({ status: r.status, code: r.json?.code }).toEqual({ status, code })
  expect(Object.keys(r.json).sort()).toEqual(['code', 'message', 'status'])
  expect(r.json.status).toBe('error')
  expect(typeof r.json.message).toBe('string')
  expect(r.headers['access-control-allow-origin']).toBe('*')
  if (status === 429 || status === 503) expect(r.headers['retry-after']).toMatch(/^[1-9][0-9]*$/)
}

function expectAccepted(r: ClientResponse, message: Message): void {
  expect(r.status).toBe(202)
  expect(r.json).toEqual({ status: 'accepted', message_id: message.message_id })
  expect(r.headers['access-control-allow-origin']).toBe('*')
}

describe('accepting', () => {
  it('answers 202 before the application runs, then hands it the message with its level', async () => {
    const gate = deferred()
    let finished = false
    const seen: unknown[] = []
    const inbox = await startInbox({
      onMessage: async (message, info) => {
        seen.push({ id: message.message_id, ...info })
        await gate.promise
        finished = true
      },
    })
    const alice = await fixtureAgent()
    const m = await signedMessage(alice, inbox.agentId)
    const r = await post(inbox.inboxUrl, m, { 'idempotency-key': m.message_id })
    expectAccepted(r, m)
    expect(finished).toBe(false)
    await until(() => seen.length === 1)
    expect(seen[0]).toEqual({
      id: m.message_id,
      level: 3,
      source: 'did-key',
      keyId: alice.signer.keyId,
      knownContact: false,
      transport: 'https',
      sealed: false,
    })
    expect(inbox.handler.pending).toBe(1)
    gate.resolve()
    await until(() => finished && inbox.handler.pending === 0)
  })

  it('accepts the Content-Type variants of PROFILE §6 and a subscribed topic', async () => {
    const inbox = await startInbox({ topics: ['news/agents'] })
    const alice = await fixtureAgent()
    const m = await signedMessage(alice, inbox.agentId)
    expectAccepted(
      await post(inbox.inboxUrl, m, { 'content-type': 'Application/JSON ; Charset="UTF-8"' }),
      m,
    )
    const t = await signedMessage(alice, inbox.agentId, { to: { topic: 'news/agents' } })
    expectAccepted(await post(inbox.inboxUrl, t), t)
  })

  it('persists an accepted message before the 202 and deletes it once processed', async () => {
    const storage = memoryStorage()
    const gate = deferred()
    const inbox = await startInbox({ storage, onMessage: () => gate.promise })
    const m = await signedMessage(await fixtureAgent(), inbox.agentId)
    expectAccepted(await post(inbox.inboxUrl, m), m)
    const stored = await storage.list('inbox/pending/')
    expect(stored).toHaveLength(1)
    expect((stored[0]![1] as { message: Message }).message.message_id).toBe(m.message_id)
    gate.resolve()
    await until(() => inbox.handler.pending === 0)
    expect(await storage.list('inbox/pending/')).toHaveLength(0)
  })
})

describe('PROFILE §6 status table, through a real client', () => {
  it('400 invalid_format: invalid JSON, duplicate keys, 65-deep nesting, lone surrogates', async () => {
    const inbox = await startInbox()
    const alice = await fixtureAgent()
    const text = JSON.stringify(await signedMessage(alice, inbox.agentId))
    const bodies: Array<[string, RegExp]> = [
      ['{"version":"1",', /unterminated|end of input/],
      [text.replace('{', '{"phase":"greeting",'), /duplicate member name "phase"/],
      ['{"a":' + '['.repeat(64) + ']'.repeat(64) + '}', /deeper than 64/],
      [text.replace('"hello"', '"\\ud800"'), /lone surrogate/],
      ['[1]', /object/],
      ['', /no value/],
    ]
    for (const [body, why] of bodies) {
      const r = await post(inbox.inboxUrl, body)
      expectError(r, 400, 'invalid_format')
      expect(r.json.message).toMatch(why)
    }
    expect(inbox.received).toHaveLength(0)
  })

  it('400 invalid_format: missing fields, wrong types, wrong addressee, Idempotency-Key mismatch', async () => {
    const inbox = await startInbox()
    const alice = await fixtureAgent()
    const m = await signedMessage(alice, inbox.agentId)
    const { conversation_id: _c, ...missing } = m
    const cases: Array<[RegExp, unknown, Record<string, string>?]> = [
      [/^conversation_id/, missing],
      [/^sequence: must be an integer/, { ...m, sequence: '0' }],
      [/^body.parts: must be an array/, { ...m, body: { parts: {} } }],
      [/^to.agent/, await signedMessage(alice, 'someone-else')],
      [/^to.topic/, await signedMessage(alice, inbox.agentId, { to: { topic: 'other' } })],
      [/^Idempotency-Key/, m, { 'idempotency-key': 'not-the-id' }],
    ]
    for (const [why, body, headers] of cases) {
      const r = await post(inbox.inboxUrl, body, headers)
      expectError(r, 400, 'invalid_format')
      expect(r.json.message).toMatch(why)
    }
    expect(inbox.received).toHaveLength(0)
  })

  it('400 stale_message: old date, future date, expired TTL', async () => {
    const inbox = await startInbox()
    const alice = await fixtureAgent()
    const now = Date.now()
    const old = await signedMessage(
      alice,
      inbox.agentId,
      { date: now - 9 * DAY },
      { created: now - 9 * DAY },
    )
    const future = await signedMessage(
      alice,
      inbox.agentId,
      { date: now + 10 * 60_000 },
      { created: now },
    )
    const expired = await signedMessage(
      alice,
      inbox.agentId,
      { date: now - 120_000, ttlSeconds: 60 },
      { created: now - 120_000 },
    )
    for (const m of [old, future, expired])
      expectError(await post(inbox.inboxUrl, m), 400, 'stale_message')
  })

  it('401 invalid_signature: unsigned, another agent’s key, tampered', async () => {
    const inbox = await startInbox()
    const alice = await fixtureAgent()
    const mallory = await fixtureAgent()
    const m = await signedMessage(alice, inbox.agentId)
    const { security: _s, ...unsigned } = m
    const forged = await signedMessage(
      alice,
      inbox.agentId,
      {},
      { signer: ed25519Signer(mallory.keys, alice.signer.keyId) },
    )
    const tampered = { ...m, body: { parts: [{ type: 'text', text: 'pay mallory' }] } }
    for (const body of [unsigned, forged, tampered]) {
      expectError(await post(inbox.inboxUrl, body), 401, 'invalid_signature')
    }
    expect(inbox.received).toHaveLength(0)
  })

  it('malformed and badly signed is 400, not 401', async () => {
    const inbox = await startInbox()
    const m = await signedMessage(await fixtureAgent(), inbox.agentId)
    const { security: _s, conversation_id: _c, ...bad } = m
    expectError(await post(inbox.inboxUrl, bad), 400, 'invalid_format')
  })

  it('401 unknown_sender: a simple name without a key', async () => {
    const inbox = await startInbox()
    const keys = await generateKeyPair()
    const carol = { id: 'carol', signer: ed25519Signer(keys, 'carol#k1') }
    expectError(
      await post(inbox.inboxUrl, await signedMessage(carol, inbox.agentId)),
      401,
      'unknown_sender',
    )
  })

  it('401 insufficient_auth_level: a conversation at level 2 refuses a level-1 message', async () => {
    const pinned = await generateKeyPair()
    const introduced = await generateKeyPair()
    const table = new Map([
      ['carol#pin', { publicKey: pinned.publicKey, source: 'pinned' as const }],
      ['carol#intro', { publicKey: introduced.publicKey, source: 'introduction' as const }],
    ])
    const inbox = await startInbox({ resolver: tableResolver(table) })
    const strong = { id: 'carol', signer: ed25519Signer(pinned, 'carol#pin') }
    const weak = { id: 'carol', signer: ed25519Signer(introduced, 'carol#intro') }
    const first = await signedMessage(strong, inbox.agentId, { conversationId: 'c-level' })
    expectAccepted(await post(inbox.inboxUrl, first), first)
    const second = await signedMessage(weak, inbox.agentId, {
      conversationId: 'c-level',
      sequence: 1,
    })
    const r = await post(inbox.inboxUrl, second)
    expectError(r, 401, 'insufficient_auth_level')
    expect(r.json.message).toMatch(/level 2/)
    await until(() => inbox.received.length === 1)
    expect(inbox.received[0]!.info.level).toBe(2)
  })

  it('413 payload_too_large: a 1 MiB + 1 byte message, and a body over 1 MiB + 64 KiB', async () => {
    const inbox = await startInbox()
    const alice = await fixtureAgent()
    // Size the text so JCS(message without trace) is exactly `bytes`.
    const sized = async (bytes: number) => {
      const base = await signedMessage(alice, inbox.agentId, { text: '', conversationId: 'c-big' })
      const pad = bytes - canonicalizeToBytes(base).byteLength
      const m = await signedMessage(alice, inbox.agentId, {
        text: 'a'.repeat(pad),
        conversationId: 'c-big',
        messageId: base.message_id,
      })
      expect(canonicalizeToBytes(m).byteLength).toBe(bytes)
      return m
    }
    const over = await sized(1_048_577)
    expectError(await post(inbox.inboxUrl, over), 413, 'payload_too_large')
    const limit = await sized(1_048_576)
    expectAccepted(await post(inbox.inboxUrl, limit), limit)
    const huge = '{"a":"' + 'x'.repeat(1_048_576 + 65_536) + '"}'
    const r = await post(inbox.inboxUrl, huge)
    expectError(r, 413, 'payload_too_large')
    expect(r.headers.connection).toBe('close')
  })

  it('429 rate_limited per client address, with Retry-After', async () => {
    const inbox = await startInbox({ limits: { perAddress: { perMinute: 6, burst: 2 } } })
    expectError(await post(inbox.inboxUrl, '{'), 400, 'invalid_format')
    expectError(await post(inbox.inboxUrl, '{'), 400, 'invalid_format')
    const r = await post(inbox.inboxUrl, '{')
    expectError(r, 429, 'rate_limited')
    expect(r.headers['retry-after']).toBe('10')
  })

  it('429 rate_limited per verified sender: a flood from one sender does not stop another', async () => {
    const inbox = await startInbox({ limits: { perSender: { perMinute: 60, burst: 3 } } })
    const alice = await fixtureAgent()
    const bob = await fixtureAgent()
    // Forgeries in alice's name do not spend her quota (the limit counts verified messages).
    const forged = await signedMessage(
      alice,
      inbox.agentId,
      {},
      { signer: ed25519Signer(bob.keys, alice.signer.keyId) },
    )
    for (let i = 0; i < 5; i++)
      expectError(await post(inbox.inboxUrl, forged), 401, 'invalid_signature')
    for (let i = 0; i < 3; i++) {
      const m = await signedMessage(alice, inbox.agentId)
      expectAccepted(await post(inbox.inboxUrl, m), m)
    }
    const r = await post(inbox.inboxUrl, await signedMessage(alice, inbox.agentId))
    expectError(r, 429, 'rate_limited')
    expect(r.headers['retry-after']).toBe('1')
    const fromBob = await signedMessage(bob, inbox.agentId)
    expectAccepted(await post(inbox.inboxUrl, fromBob), fromBob)
  })

  it('202 for a replayed id, processed once', async () => {
    const inbox = await startInbox()
    const m = await signedMessage(await fixtureAgent(), inbox.agentId)
    expectAccepted(await post(inbox.inboxUrl, m), m)
    expectAccepted(await post(inbox.inboxUrl, m), m)
    await until(() => inbox.received.length === 1 && inbox.handler.pending === 0)
    expectAccepted(await post(inbox.inboxUrl, m), m)
    await new Promise((r) => setTimeout(r, 50))
    expect(inbox.received).toHaveLength(1)
  })

  it('404 not_found, 405 method_not_allowed with Allow, 415 unsupported_media_type', async () => {
    const inbox = await startInbox()
    expectError(await send(inbox.url + '/nope', { method: 'GET' }), 404, 'not_found')
    expectError(
      await send(inbox.url + '/.well-known/agentmsg/identity', { method: 'GET' }),
      404,
      'not_found',
    )
    const get = await send(inbox.inboxUrl, { method: 'GET' })
    expectError(get, 405, 'method_not_allowed')
    expect(get.headers.allow).toBe('POST, OPTIONS')
    const del = await send(inbox.url + '/.well-known/agentmsg/capabilities', { method: 'DELETE' })
    expectError(del, 405, 'method_not_allowed')
    expect(del.headers.allow).toBe('GET, HEAD, OPTIONS')
    const m = await signedMessage(await fixtureAgent(), inbox.agentId)
    for (const type of [
      'text/plain',
      'application/json; charset=latin1',
      'application/x-www-form-urlencoded',
    ]) {
      expectError(
        await post(inbox.inboxUrl, m, { 'content-type': type }),
        415,
        'unsupported_media_type',
      )
    }
    expectError(
      await send(inbox.inboxUrl, { body: JSON.stringify(m) }),
      415,
      'unsupported_media_type',
    )
  })

  it('503 unavailable with Retry-After when the queue is full, 202 again once it drains', async () => {
    const gate = deferred()
    const inbox = await startInbox({
      limits: { maxQueue: 1, queueRetryAfter: 7 },
      onMessage: () => gate.promise,
    })
    const alice = await fixtureAgent()
    const first = await signedMessage(alice, inbox.agentId)
    expectAccepted(await post(inbox.inboxUrl, first), first)
    const second = await signedMessage(alice, inbox.agentId)
    const r = await post(inbox.inboxUrl, second)
    expectError(r, 503, 'unavailable')
    expect(r.headers['retry-after']).toBe('7')
    gate.resolve()
    await until(() => inbox.handler.pending === 0)
    // Not remembered as seen: the sender's retry is accepted and processed.
    expectAccepted(await post(inbox.inboxUrl, second), second)
  })

  it('503 unavailable with Retry-After when a key cannot be looked up now', async () => {
    const inbox = await startInbox({
      resolver: {
        resolve: async () => ({
          status: 'unavailable',
          reason: 'identity server timed out',
          retryAfter: 42,
        }),
      },
    })
    const r = await post(inbox.inboxUrl, await signedMessage(await fixtureAgent(), inbox.agentId))
    expectError(r, 503, 'unavailable')
    expect(r.headers['retry-after']).toBe('42')
  })

  it('500 internal_error with a generic message when something unexpected throws', async () => {
    const inbox = await startInbox({
      resolver: {
        resolve: async () => {
          throw new Error('database password is hunter2')
        },
      },
    })
    const r = await post(inbox.inboxUrl, await signedMessage(await fixtureAgent(), inbox.agentId))
    expectError(r, 500, 'internal_error')
    expect(r.text).not.toMatch(/hunter2|Error|at /)
    expect(String(inbox.errors[0])).toMatch(/hunter2/)
  })
})
