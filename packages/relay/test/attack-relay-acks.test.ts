/**
 * Attack: malformed acknowledgements. An ack whose `message_id` held U+0000 answered 500 on the
 * PostgreSQL store (200 on SQLite), its error rolled back the batch it rode in, so batches of
 * them slowed everyone's publishes. PROFILE §9: each entry's `message_id` is of §2's grammar and
 * `from` an agent id, else 400 `invalid_format` for the whole request, on every store, checked
 * before the store sees it; `DELETE /relay/messages/{id}` alike. A real relay on loopback (this
 * file also runs as `relay-on-postgres`); the relay must report no error (relayPerTest).
 */
import { signedMessage } from '@agentmsg/conformance'
import { describe, expect, it } from 'vitest'
import { aliceAndBob, relayPerTest, type TestRelay } from './helpers.js'

const { start } = relayPerTest()

const ALICE = 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK'

/** Entries §9 refuses: ids off §2's grammar (U+0000 first), `from` that is not an agent id. */
const BAD_ENTRIES: Array<[string, Record<string, unknown>]> = [
  ['U+0000 in message_id', { message_id: 'm\u0000', from: ALICE }],
  ['message_id only U+0000', { message_id: '\u0000', from: ALICE }],
  ['an empty message_id', { message_id: '', from: ALICE }],
  ['a 129-character message_id', { message_id: 'm'.repeat(129), from: ALICE }],
  ['a message_id starting with a dot', { message_id: '.m', from: ALICE }],
  ['a number as message_id', { message_id: 7, from: ALICE }],
  ['U+0000 in from', { message_id: 'm', from: `${ALICE}\u0000` }],
  ['from that is not an agent id', { message_id: 'm', from: 'alice smith' }],
  ['no from', { message_id: 'm' }],
]

async function published(relay: TestRelay) {
  const { client, alice, bob } = await aliceAndBob(relay)
  const message = await signedMessage(alice, bob.id)
  expect((await client.publish(message)).status).toBe(202)
  const good = { message_id: message.message_id, from: alice.id }
  const held = async () => (await client.retrieve(bob)).messages.map((m) => m.message_id)
  return { client, alice, bob, good, held }
}

const replyOf = async (res: Response) => ({
  http: res.status,
  ...((await res.json()) as Record<string, unknown>),
})

describe('attack: malformed acknowledgements (PROFILE §9)', () => {
  it('POST /relay/ack: one bad entry → 400 invalid_format for the whole request; nothing removed', async () => {
    const relay = await start()
    const { client, bob, good, held } = await published(relay)
    for (const [name, bad] of BAD_ENTRIES) {
      const res = await client.request('POST', '/relay/ack', {
        as: bob,
        body: { agent: bob.id, acks: [good, bad] },
      })
      expect(await replyOf(res), name).toMatchObject({ http: 400, code: 'invalid_format' })
    }
    // 500 of them in one request: refused alike, before the store.
    const many = Array.from({ length: 500 }, (_, i) => ({ message_id: `m\u0000${i}`, from: ALICE }))
    const res = await client.request('POST', '/relay/ack', {
      as: bob,
      body: { agent: bob.id, acks: many },
    })
    expect(await replyOf(res)).toMatchObject({ http: 400, code: 'invalid_format' })
    expect(await held()).toEqual([good.message_id])
    // The control: the good entry alone removes it.
    const ok = await client.request('POST', '/relay/ack', {
      as: bob,
      body: { agent: bob.id, acks: [good] },
    })
    expect(await replyOf(ok)).toEqual({ http: 200, status: 'acknowledged', removed: 1 })
    expect(await held()).toEqual([])
  })

  it('DELETE /relay/messages/{id}: the same rule for the id and from; nothing removed', async () => {
    const relay = await start()
    const { client, alice, bob, good, held } = await published(relay)
    const q = (id: string, from?: string) =>
      `/relay/messages/${encodeURIComponent(id)}?agent=${encodeURIComponent(bob.id)}` +
      (from === undefined ? '' : `&from=${encodeURIComponent(from)}`)
    for (const path of [
      q('m\u0000', alice.id),
      q('\u0000'),
      q('.m', alice.id),
      q('m'.repeat(129), alice.id),
      q(good.message_id, `${alice.id}\u0000`),
      q(good.message_id, 'alice smith'),
      q(good.message_id, ''),
    ]) {
      const res = await client.request('DELETE', path, { as: bob })
      expect(await replyOf(res), path).toMatchObject({ http: 400, code: 'invalid_format' })
    }
    expect(await held()).toEqual([good.message_id])
    expect((await client.request('DELETE', q(good.message_id, alice.id), { as: bob })).status).toBe(
      204,
    )
    expect(await held()).toEqual([])
  })
})
