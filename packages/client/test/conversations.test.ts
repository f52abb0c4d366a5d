/**
 * The conversation sequence update: one rule for sent, received and replied-to messages —
 * after sequence n the next is at least n + 1, and it never goes back.
 */
import { memoryStorage } from '@agentmsg/core'
import { describe, expect, it } from 'vitest'
import { advanceConversation, Conversations } from '../src/agent/peers.js'

describe('advanceConversation', () => {
  it('starts a conversation after the first sequence seen', () => {
    expect(advanceConversation(undefined, 'did:key:zA', 0)).toEqual({ peer: 'did:key:zA', next: 1 })
    expect(advanceConversation(undefined, 'did:key:zA', 7)).toEqual({ peer: 'did:key:zA', next: 8 })
  })

  it('never goes back, and keeps the peer it started with', () => {
    const record = { peer: 'did:key:zA', next: 5 }
    expect(advanceConversation(record, 'did:key:zB', 2)).toEqual({ peer: 'did:key:zA', next: 5 })
    expect(advanceConversation(record, 'did:key:zB', 4)).toEqual({ peer: 'did:key:zA', next: 5 })
    expect(advanceConversation(record, 'did:key:zB', 9)).toEqual({ peer: 'did:key:zA', next: 10 })
  })
})

describe('Conversations', () => {
  it('numbers sent messages and follows received ones, persisted', async () => {
    const storage = memoryStorage()
    const conversations = new Conversations(storage)
    expect(await conversations.take('c1', 'bob')).toEqual({ sequence: 0, isNew: true })
    expect(await conversations.take('c1', 'bob')).toEqual({ sequence: 1, isNew: false })
    await conversations.seen('c1', 'bob', 4) // the peer's message 4
    expect(await conversations.take('c1', 'bob')).toEqual({ sequence: 5, isNew: false })
    await conversations.seen('c1', 'bob', 2) // an old one: no change
    expect(await storage.get('conv/bob/c1')).toEqual({
      peer: 'bob',
      next: 6,
    })

    // A conversation started by the peer: the first own message answers its sequence.
    await conversations.seen('c2', 'carol', 0)
    expect(await conversations.take('c2', 'carol')).toEqual({ sequence: 1, isNew: false })

    // Another instance on the same storage (a restart) continues.
    expect(await new Conversations(storage).take('c1', 'bob')).toEqual({
      sequence: 6,
      isNew: false,
    })
  })

  it('keeps one record per peer: another agent using the same conversation id starts its own', async () => {
    const storage = memoryStorage()
    const conversations = new Conversations(storage)
    await conversations.seen('c1', 'bob', 6)
    // Another agent using the same conversation id starts its own numbering …
    await conversations.seen('c1', 'mallory', 100)
    expect(await conversations.take('c1', 'mallory')).toEqual({ sequence: 101, isNew: false })
    // … and Bob's stays his.
    expect(await conversations.take('c1', 'bob')).toEqual({ sequence: 7, isNew: false })
    expect(await storage.get('conv/bob/c1')).toEqual({ peer: 'bob', next: 8 })
  })

  it('concurrent takes get distinct numbers', async () => {
    const conversations = new Conversations(memoryStorage())
    const taken = await Promise.all(
      Array.from({ length: 20 }, () => conversations.take('c', 'bob')),
    )
    expect(taken.map((t) => t.sequence).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 20 }, (_, i) => i),
    )
  })
})
