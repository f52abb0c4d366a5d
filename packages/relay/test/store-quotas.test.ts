/**
 * The relay store's quotas (PROFILE §9 defaults) and the SQLite schema migration from version 1
 * (counters for the sender shares and the relay-wide cap, remembered triples).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { publishInput as message, RELAY_STORE_NOW as NOW } from '@agentmsg/conformance'
import Database from 'better-sqlite3'
import { afterAll, describe, expect, it } from 'vitest'
import { resolveQuota } from '../src/store/common.js'
import { SQLITE_SCHEMA_VERSION, sqliteRelayStore } from '../src/store/sqlite.js'

const dirs: string[] = []
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

describe('quotas', () => {
  it('default to 10,000 messages or 256 MiB per mailbox, a quarter per sender, 10 GiB in all', () => {
    expect(resolveQuota(undefined)).toEqual({
      messages: 10_000,
      bytes: 256 * 1024 * 1024,
      senderMessages: 2_500,
      senderBytes: 64 * 1024 * 1024,
      totalBytes: 10 * 1024 * 1024 * 1024,
    })
    expect(resolveQuota({ messages: 100, bytes: 4000 })).toMatchObject({
      senderMessages: 25,
      senderBytes: 1000,
    })
    expect(() => resolveQuota({ totalBytes: -1 })).toThrow(RangeError)
  })
})

describe('sqliteRelayStore schema migration', () => {
  const page = { limit: 500, maxBytes: 8 << 20, now: NOW }

  it('migrates a version 1 database: counters from what it holds, acks remembered after', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'relay-store-'))
    dirs.push(dir)
    const path = join(dir, 'relay.db')
    const v1 = new Database(path)
    v1.exec(readFileSync(new URL('./fixtures/relay-schema-v1.sql', import.meta.url), 'utf8'))
    const rows: Array<[string, string, string, number]> = [
      ['alice', 'did:key:z6MkA', 'm1', 100],
      ['alice', 'did:key:z6MkA', 'm2', 200],
      ['alice', 'did:key:z6MkB', 'm3', 300],
      ['bob', 'did:key:z6MkA', 'm1', 100],
    ]
    const refs = new Map<string, number | bigint>()
    for (const [mailbox, from, id, bytes] of rows) {
      let ref = refs.get(`${from} ${id}`)
      if (ref === undefined) {
        ref = v1
          .prepare(
            'INSERT INTO messages (from_agent, message_id, json, bytes, received_at, expires_at) ' +
              'VALUES (?, ?, ?, ?, ?, ?)',
          )
          .run(
            from,
            id,
            JSON.stringify({ id, pad: 'x'.repeat(bytes - 20) }),
            bytes,
            NOW,
            NOW + 1e9,
          ).lastInsertRowid
        refs.set(`${from} ${id}`, ref)
      }
      v1.prepare(
        'INSERT INTO entries (mailbox, message_ref, from_agent, message_id, bytes) VALUES (?, ?, ?, ?, ?)',
      ).run(mailbox, ref, from, id, bytes)
      v1.prepare(
        "INSERT INTO mailboxes (agent, state, messages, bytes) VALUES (?, 'open', 1, ?) " +
          'ON CONFLICT (agent) DO UPDATE SET messages = messages + 1, bytes = bytes + excluded.bytes',
      ).run(mailbox, bytes)
    }
    v1.pragma('user_version = 1')
    v1.close()

    const store = sqliteRelayStore({ path })
    expect(await store.usage('alice')).toEqual({ messages: 3, bytes: 600 })
    expect(await store.usage('alice', 'did:key:z6MkA')).toEqual({ messages: 2, bytes: 300 })
    expect(await store.usage()).toEqual({ messages: 3, bytes: 600 })
    expect((await store.retrieve('alice', page)).entries.map((e) => e.messageId)).toEqual([
      'm1',
      'm2',
      'm3',
    ])
    expect(await store.ack('alice', 'm1', 'did:key:z6MkA')).toBe(1)
    const replay = message(['alice'], { messageId: 'm1', from: 'did:key:z6MkA' })
    expect(await store.publish(replay)).toEqual([{ mailbox: 'alice', duplicate: true }])
    expect(await store.usage('alice', 'did:key:z6MkA')).toEqual({ messages: 1, bytes: 200 })
    expect(await store.usage()).toEqual({ messages: 3, bytes: 600 })
    expect(await store.ack('bob', 'm1', 'did:key:z6MkA')).toBe(1)
    expect(await store.usage()).toEqual({ messages: 2, bytes: 500 })
    await store.close()
    const db = new Database(path, { readonly: true })
    expect(db.pragma('user_version', { simple: true })).toBe(SQLITE_SCHEMA_VERSION)
    db.close()
  })
})
