import {
  createMessage,
  type JsonValue,
  type Message,
  memoryStorage,
  type Storage,
  type StorageOp,
} from '@agentmsg/core'
import { describe, expect, it } from 'vitest'
import { Outbox, type OutboxEntry } from '../src/outbox.js'

const AGENT = 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK'

function entry(
  messageId: string,
  url = 'https://bob.example/.well-known/agentmsg/inbox',
): OutboxEntry {
  const message = createMessage({
    from: AGENT,
    to: AGENT,
    conversationId: 'c-1',
    sequence: 0,
    phase: 'greeting',
    text: 'hello',
    messageId,
    date: 1_800_000_000_000,
  }) as Message
  const target = { kind: 'inbox', agent: AGENT, urls: [url] }
  return {
    id: Outbox.entryId(messageId, target),
    message,
    target,
    firstAttempt: 1_800_000_000_000,
    attempts: 0,
    nextAttempt: 1_800_000_000_000,
    lastError: null,
  }
}

/** A storage that records every batch, to check which writes are atomic. */
function recording(inner: Storage = memoryStorage()): Storage & { batches: StorageOp[][] } {
  const batches: StorageOp[][] = []
  return {
    name: 'recording',
    batches,
    get: (k) => inner.get(k),
    put: (k, v) => inner.put(k, v),
    delete: (k) => inner.delete(k),
    batch: (ops) => {
      batches.push(ops)
      return inner.batch(ops)
    },
    list: (p, o) => inner.list(p, o),
  }
}

describe('Outbox', () => {
  it('adds, updates, lists and removes entries', async () => {
    const outbox = new Outbox(memoryStorage())
    const a = entry('msg-a')
    const b = entry('msg-b', 'https://carol.example/.well-known/agentmsg/inbox')
    await outbox.add(a)
    await outbox.add(b)
    expect(await outbox.list()).toEqual([a, b])

    await outbox.update(a.id, {
      attempts: 2,
      nextAttempt: a.firstAttempt + 3000,
      lastError: 'status 500',
    })
    expect(await outbox.get(a.id)).toEqual({
      ...a,
      attempts: 2,
      nextAttempt: a.firstAttempt + 3000,
      lastError: 'status 500',
    })

    await outbox.remove(a.id)
    expect(await outbox.get(a.id)).toBeUndefined()
    expect(await outbox.list()).toEqual([b])
    await outbox.remove(a.id) // removing twice is fine
  })

  it('writes the message once and the state separately; add and remove are atomic batches', async () => {
    const storage = recording()
    const outbox = new Outbox(storage, { prefix: 'out/' })
    const a = entry('msg-a')
    await outbox.add(a)
    expect(storage.batches).toHaveLength(1)
    expect(storage.batches[0]!.map((op) => [op.type, op.key])).toEqual([
      ['put', `out/${a.id}/m`],
      ['put', `out/${a.id}/s`],
    ])
    await outbox.update(a.id, { attempts: 1, nextAttempt: 5, lastError: 'x' })
    expect(storage.batches).toHaveLength(1)
    expect(await storage.get(`out/${a.id}/s`)).toEqual({
      attempts: 1,
      nextAttempt: 5,
      lastError: 'x',
    })
    await outbox.remove(a.id)
    expect(storage.batches[1]!.map((op) => op.type)).toEqual(['delete', 'delete'])
    expect(await storage.list('out/')).toEqual([])
  })

  it('keeps values plain JSON (no undefined members)', async () => {
    const outbox = new Outbox(memoryStorage())
    // memoryStorage refuses undefined members: this would throw if lastError were undefined.
    await outbox.add({ ...entry('msg-a'), lastError: null })
  })

  it('makes distinct, flat ids per message and target', () => {
    const t1 = {
      kind: 'inbox',
      agent: AGENT,
      urls: ['https://a.example/.well-known/agentmsg/inbox'],
    }
    const t2 = {
      kind: 'inbox',
      agent: AGENT,
      urls: ['https://b.example/.well-known/agentmsg/inbox'],
    }
    expect(Outbox.entryId('m-1', t1)).not.toBe(Outbox.entryId('m-1', t2))
    expect(Outbox.entryId('m-1', t1)).not.toContain('/')
  })

  it('only lists its own prefix and skips records it cannot read', async () => {
    const storage = memoryStorage()
    const outbox = new Outbox(storage)
    const a = entry('msg-a')
    await outbox.add(a)
    await storage.put('outboxes/other/m', { id: 'x' })
    await storage.put('outbox/broken/m', { id: 'broken', message: 'nope' })
    await storage.put('outbox/orphan/s', { attempts: 1, nextAttempt: 0, lastError: null })
    expect(await outbox.list()).toEqual([a])
  })

  it('reads an entry without a state record as never attempted', async () => {
    const storage = memoryStorage()
    const outbox = new Outbox(storage)
    const a = entry('msg-a')
    await outbox.add({ ...a, attempts: 3, lastError: 'x' })
    await storage.delete(`outbox/${a.id}/s`)
    expect(await outbox.list()).toEqual([a])
  })

  it('reads a target stored by an earlier version ({kind, url}) as the new shape, same id', async () => {
    const storage = memoryStorage()
    const outbox = new Outbox(storage)
    const a = entry('msg-a')
    const url = a.target.urls[0]!
    // What the previous sender wrote: the id was <message_id>~inbox~<encoded url> then too.
    expect(a.id).toBe(`msg-a~inbox~${encodeURIComponent(url)}`)
    await storage.put(`outbox/${a.id}/m`, {
      id: a.id,
      message: a.message as unknown as JsonValue,
      target: { kind: 'inbox', url },
      firstAttempt: a.firstAttempt,
    })
    await storage.put(`outbox/${a.id}/s`, { attempts: 2, nextAttempt: 7, lastError: 'status 500' })
    const [read] = await outbox.list()
    expect(read).toEqual({ ...a, attempts: 2, nextAttempt: 7, lastError: 'status 500' })
    expect(read!.target).toEqual({ kind: 'inbox', agent: AGENT, urls: [url] })
    expect(Outbox.entryId('msg-a', read!.target)).toBe(a.id)
  })

  it('stores the target as {kind, agent, urls} and skips targets it cannot read', async () => {
    const storage = memoryStorage()
    const outbox = new Outbox(storage)
    const a = entry('msg-a')
    await outbox.add(a)
    expect(await storage.get(`outbox/${a.id}/m`)).toMatchObject({
      target: { kind: 'inbox', agent: AGENT, urls: [a.target.urls[0]] },
    })
    const b = entry('msg-b')
    await storage.put(`outbox/${b.id}/m`, {
      id: b.id,
      message: b.message as unknown as JsonValue,
      target: { kind: 'inbox', agent: AGENT, urls: [42] },
      firstAttempt: b.firstAttempt,
    })
    expect(await outbox.list()).toEqual([a])
  })
})
