/**
 * Sealing on send, end to end through a real relay on its SQLite store (SPEC §5.7.2, PROFILE
 * §8): relays are untrusted by default, so a body sent through one is sealed for the recipient
 * without any option, and nothing the relay writes to disk (database, WAL, shared memory, any
 * other file in its data directory) holds the text. The controls prove the scan can fail: a
 * relay marked trusted, and `seal: false`, leave the text in the relay's files. A recipient
 * whose key cannot be learned is refused unless the caller allows plaintext.
 */
import { randomBytes } from 'node:crypto'
import { isAgentMsgError, memoryStorage, type Storage } from '@agentmsg/core'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createNodeAgent, type NodeAgent, type NodeAgentOptions } from '../src/node.js'
import { collect, createEnv, type Env, freePort } from './helpers.js'
import { anyContains, type SqliteRelay, startSqliteRelay } from './sqlite-relay.js'

let env: Env
/** The test's relay (one per test, so its files hold only that test's messages). */
let store: SqliteRelay
const stores: SqliteRelay[] = []
const open: NodeAgent[] = []

beforeAll(async () => {
  env = await createEnv()
})
afterEach(async () => {
  await Promise.all(open.splice(0).map((a) => a.close()))
  for (const s of stores.splice(0)) {
    expect(s.errors).toEqual([])
    await s.remove()
  }
})

async function startStore(): Promise<string> {
  store = await startSqliteRelay(env)
  stores.push(store)
  return store.relay.url
}

async function agent(options: NodeAgentOptions): Promise<NodeAgent> {
  const a = await createNodeAgent({
    fetch: env.fetch,
    streamFetch: env.streamFetch,
    storage: memoryStorage(),
    ...options,
  })
  open.push(a)
  return a
}

/** Alice and Bob, both did:key and relay-only on one fresh SQLite relay. */
async function relayPair(aliceOptions: (url: string) => Partial<NodeAgentOptions> = () => ({})) {
  const url = await startStore()
  const bob = await agent({ relays: [url] })
  const alice = await agent({ relays: [url], ...aliceOptions(url) })
  return { url, alice, bob, atBob: collect(bob, 'message') }
}

/** A text no file could hold by chance: an ASCII marker (searched for as bytes) and non-ASCII. */
function secretText(): { marker: string; text: string } {
  const marker = `marker-${randomBytes(16).toString('hex')}`
  return { marker, text: `${marker} — grüße, 秘密 🔐` }
}

describe('sealed by default through an untrusted relay (SQLite)', () => {
  it('bob opens it; the relay’s database, WAL and data directory never hold the text', async () => {
    const { url, alice, bob, atBob } = await relayPair()
    const { marker, text } = secretText()

    const sent = await alice.send(bob.id, text, { relays: [url] })
    expect(sent).toMatchObject({ route: 'relay', relayUrl: url, sealed: true })
    const got = await atBob.nth(1)
    expect(got).toMatchObject({ sealed: true, text, from: alice.id, transport: 'relay' })
    expect(got.message.message_id).toBe(sent.messageId)
    expect(got.message.body.parts).toEqual([{ type: 'text', text }])

    // While the relay runs: the database and its WAL exist and hold the message (its id is
    // there, so the scan reads where messages are kept), but not its text.
    const files = await store.storeFiles()
    expect([...files.keys()]).toEqual(expect.arrayContaining(['relay.sqlite', 'relay.sqlite-wal']))
    expect(anyContains(files, sent.messageId)).toBe(true)
    expect(anyContains(files, marker)).toBe(false)
    expect(await store.filesContaining(marker)).toEqual([])

    // After closing (the WAL checkpointed into the database and removed): the database still
    // holds the message's id (remembered against replays), never its text.
    await Promise.all(open.splice(0).map((a) => a.close()))
    await store.close()
    expect(await store.filesContaining(sent.messageId)).toContain('relay.sqlite')
    expect(await store.filesContaining(marker)).toEqual([])
  })
})

describe('plaintext through the relay when the sender chooses it (controls of the scan)', () => {
  it.each([
    ['relayTrust marks the relay trusted', 'trusted', undefined],
    ['seal: false', undefined, false],
  ] as const)(
    '%s: bob gets it unsealed and the relay’s files hold the text',
    async (_, trust, seal) => {
      const { url, alice, bob, atBob } = await relayPair((u) =>
        trust ? { relayTrust: { [u]: trust } } : {},
      )
      const { marker, text } = secretText()

      const sent = await alice.send(bob.id, text, {
        relays: [url],
        ...(seal === undefined ? {} : { seal }),
      })
      expect(sent).toMatchObject({ route: 'relay', sealed: false })
      expect(await atBob.nth(1)).toMatchObject({ sealed: false, text, from: alice.id })
      expect(anyContains(await store.storeFiles(), marker)).toBe(true)
      expect(await store.filesContaining(marker)).not.toEqual([])
    },
  )
})

describe('direct inbox deliveries', () => {
  it('are not sealed by default; seal: true seals them for the URL agent’s active key', async () => {
    const port = await freePort()
    const bob = await agent({
      identity: { agentId: `https://127.0.0.1:${port}` },
      inbox: { port, tls: { cert: env.cert.cert, key: env.cert.key } },
    })
    const alice = await agent({})
    const atBob = collect(bob, 'message')

    const plain = await alice.send(bob.id, 'over TLS to bob himself', { route: 'direct' })
    expect(plain).toMatchObject({ route: 'direct', transport: 'https', sealed: false })
    expect(await atBob.nth(1)).toMatchObject({ sealed: false, transport: 'https' })

    const { text } = secretText()
    const sealed = await alice.send(bob.id, text, { route: 'direct', seal: true })
    expect(sealed).toMatchObject({ route: 'direct', transport: 'https', sealed: true })
    const got = await atBob.nth(2)
    expect(got).toMatchObject({ sealed: true, text, transport: 'https', from: alice.id })
    expect(got.message.message_id).toBe(sealed.messageId)
  })
})

describe('a URL recipient whose identity document cannot be fetched, through a relay', () => {
  it('is refused (not_found) unless allowPlaintext, which sends it unsealed', async () => {
    const url = await startStore()
    const port = await freePort()
    const storage: Storage = memoryStorage()
    const bobOptions: NodeAgentOptions = {
      identity: { agentId: `https://127.0.0.1:${port}` },
      inbox: { port, tls: { cert: env.cert.cert, key: env.cert.key } },
      relays: [url],
      storage,
    }
    // Bob opens his mailbox on the relay, then goes offline: his identity document (served by
    // his own inbox) cannot be fetched, while the relay still takes messages for him.
    const first = await agent(bobOptions)
    open.splice(open.indexOf(first), 1)
    await first.close()
    const alice = await agent({ relays: [url] })
    const { marker, text } = secretText()

    const refused = await alice.send(first.id, text, { relays: [url], route: 'relay' }).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(isAgentMsgError(refused)).toBe(true)
    expect(refused).toMatchObject({ code: 'not_found' })
    expect(String((refused as Error).message)).toContain('allowPlaintext')
    expect(await store.filesContaining(marker)).toEqual([])

    const sent = await alice.send(first.id, text, {
      relays: [url],
      route: 'relay',
      allowPlaintext: true,
    })
    expect(sent).toMatchObject({ route: 'relay', relayUrl: url, sealed: false })
    expect(anyContains(await store.storeFiles(), marker)).toBe(true)

    // Bob comes back on the same storage and port, and reads it from his mailbox, unsealed.
    const bob = await agent(bobOptions)
    expect(bob.id).toBe(first.id)
    const got = await collect(bob, 'message').nth(1)
    expect(got).toMatchObject({ sealed: false, text, transport: 'relay', from: alice.id })
    expect(got.message.message_id).toBe(sent.messageId)
  })
})
