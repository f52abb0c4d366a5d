import { describe, expect, it } from 'vitest'
import {
  type AuthLevelInput,
  AuthLevelTracker,
  type KeySource,
  levelForKeySource,
} from '../src/auth-level.js'
import { memoryStorage } from '../src/storage/memory.js'
import type { AuthLevel, SignatureAlg } from '../src/types.js'

const ALICE = 'https://alice.example'

/** A message input: Ed25519 unless level 0, which is an HMAC introduction token. */
function msg(
  level: AuthLevel,
  extra: Partial<AuthLevelInput> & { conv?: string } = {},
): AuthLevelInput {
  const { conv, ...rest } = extra
  const algs: SignatureAlg[] = level === 0 ? ['hmac-sha256'] : ['ed25519']
  return { from: ALICE, conversationId: conv ?? 'c1', phase: 'request', level, algs, ...rest }
}

async function refused(
  promise: Promise<unknown>,
): Promise<{ code: string; status: number; message: string }> {
  try {
    await promise
  } catch (error) {
    return error as { code: string; status: number; message: string }
  }
  throw new Error('expected a refusal')
}

describe('levelForKeySource', () => {
  const table: Array<[KeySource, AuthLevel]> = [
    ['shared-secret', 0],
    ['introduction', 1],
    ['identity-document', 2],
    ['pinned', 2],
    ['did-key', 3],
  ]
  for (const [source, level] of table) {
    it(`${source} → ${level}`, () => {
      expect(levelForKeySource(source)).toBe(level)
    })
  }

  it('throws for an unknown source', () => {
    expect(() => levelForKeySource('guess' as KeySource)).toThrow(TypeError)
  })
})

describe('AuthLevelTracker per conversation', () => {
  it('starts a new conversation at the level of its first message', async () => {
    const levels = new AuthLevelTracker()
    expect(await levels.conversationLevel(ALICE, 'c1')).toBeNull()
    const decision = await levels.admit(msg(0, { phase: 'greeting' }))
    expect(decision).toEqual({
      from: ALICE,
      conversationId: 'c1',
      previousLevel: null,
      level: 0,
      messageLevel: 0,
      renegotiated: false,
      escalated: false,
      peerFloor: 0,
    })
    expect(await levels.conversationLevel(ALICE, 'c1')).toBe(0)
  })

  it('escalates 0 → 1 → 2 → 3', async () => {
    const levels = new AuthLevelTracker()
    await levels.admit(msg(0, { phase: 'greeting' }))
    for (const level of [1, 2, 3] as const) {
      const decision = await levels.admit(msg(level))
      expect(decision).toMatchObject({
        previousLevel: level - 1,
        level,
        escalated: true,
        renegotiated: false,
      })
      expect(await levels.conversationLevel(ALICE, 'c1')).toBe(level)
    }
    expect(await levels.peerFloor(ALICE)).toBe(3)
  })

  it('accepts further messages at the same level without escalating', async () => {
    const levels = new AuthLevelTracker()
    await levels.admit(msg(1))
    expect(await levels.admit(msg(1))).toMatchObject({
      previousLevel: 1,
      level: 1,
      escalated: false,
    })
  })

  it('refuses a message below the conversation level with 401 insufficient_auth_level', async () => {
    const levels = new AuthLevelTracker()
    await levels.admit(msg(1))
    await levels.admit(msg(3))
    for (const level of [0, 1, 2] as const) {
      const error = await refused(levels.evaluate(msg(level)))
      expect(error).toMatchObject({ code: 'insufficient_auth_level', status: 401 })
    }
    const error = await refused(levels.evaluate({ ...msg(2), algs: ['ed25519'] }))
    expect(error.message).toMatch(/conversation c1 .* is at auth level 3.*verified only at level 2/)
    expect(await levels.conversationLevel(ALICE, 'c1')).toBe(3)
  })

  it('keeps conversations apart, per sender too', async () => {
    const levels = new AuthLevelTracker()
    await levels.admit(msg(1, { conv: 'c1' }))
    await levels.admit(msg(1, { conv: 'c2' }))
    await levels.admit(msg(1, { conv: 'c2', from: 'bob' }))
    await levels.admit(msg(3, { conv: 'c2', from: 'bob' }))
    expect(await levels.conversationLevel(ALICE, 'c2')).toBe(1)
    expect(await levels.conversationLevel('bob', 'c2')).toBe(3)
    await expect(levels.evaluate(msg(1, { conv: 'c2' }))).resolves.toMatchObject({ level: 1 })
  })

  it('does not let auth_level alone escalate or lower', async () => {
    const levels = new AuthLevelTracker()
    expect(await levels.admit(msg(1, { phase: 'greeting', requestedLevel: 3 }))).toMatchObject({
      level: 1,
    })
    await levels.admit(msg(2))
    // A non-greeting asking for less is not a renegotiation, whatever its own level.
    expect(await levels.admit(msg(2, { phase: 'request', requestedLevel: 0 }))).toMatchObject({
      level: 2,
      renegotiated: false,
    })
    const error = await refused(levels.evaluate(msg(1, { phase: 'update', requestedLevel: 1 })))
    expect(error.code).toBe('insufficient_auth_level')
  })

  it('refuses an auth_level that is not an integer 0–3', async () => {
    const levels = new AuthLevelTracker()
    for (const requestedLevel of [4, -1, 1.5]) {
      const error = await refused(levels.evaluate(msg(1, { phase: 'greeting', requestedLevel })))
      expect(error.code).toBe('invalid_format')
    }
  })
})

describe('AuthLevelTracker renegotiation', () => {
  it('lowers the level for a greeting with auth_level k verified at ≥ the current level', async () => {
    const levels = new AuthLevelTracker()
    await levels.admit(msg(3))
    const decision = await levels.admit(msg(3, { phase: 'greeting', requestedLevel: 1 }))
    expect(decision).toMatchObject({
      previousLevel: 3,
      level: 1,
      messageLevel: 3,
      renegotiated: true,
      escalated: false,
    })
    expect(await levels.conversationLevel(ALICE, 'c1')).toBe(1)
    // Level-1 messages are fine now.
    await expect(levels.admit(msg(1))).resolves.toMatchObject({ level: 1 })
  })

  it('also renegotiates with a greeting verified above the current level', async () => {
    const levels = new AuthLevelTracker()
    await levels.admit(msg(1))
    await expect(
      levels.admit(msg(2, { phase: 'greeting', requestedLevel: 0 })),
    ).resolves.toMatchObject({ level: 0, renegotiated: true })
  })

  it('refuses a non-greeting with a lower auth_level', async () => {
    const levels = new AuthLevelTracker()
    await levels.admit(msg(2))
    const error = await refused(levels.evaluate(msg(1, { phase: 'request', requestedLevel: 1 })))
    expect(error).toMatchObject({ code: 'insufficient_auth_level', status: 401 })
  })

  it('refuses a greeting with a lower auth_level verified below the current level', async () => {
    const levels = new AuthLevelTracker()
    await levels.admit(msg(2))
    const error = await refused(levels.evaluate(msg(1, { phase: 'greeting', requestedLevel: 1 })))
    expect(error).toMatchObject({ code: 'insufficient_auth_level', status: 401 })
    expect(await levels.conversationLevel(ALICE, 'c1')).toBe(2)
  })

  it('treats a greeting with auth_level equal to the current level as ordinary', async () => {
    const levels = new AuthLevelTracker()
    await levels.admit(msg(2))
    expect(await levels.admit(msg(2, { phase: 'greeting', requestedLevel: 2 }))).toMatchObject({
      level: 2,
      renegotiated: false,
    })
  })
})

describe('AuthLevelTracker peer floor', () => {
  it('stays 0 until the peer is verified at ≥ 2', async () => {
    const levels = new AuthLevelTracker()
    await levels.admit(msg(1))
    expect(await levels.peerFloor(ALICE)).toBe(0)
    await levels.admit(msg(2))
    expect(await levels.peerFloor(ALICE)).toBe(2)
  })

  it('after a level-2 message, refuses a fresh conversation at level 1', async () => {
    const levels = new AuthLevelTracker()
    await levels.admit(msg(2, { conv: 'c1' }))
    const error = await refused(levels.evaluate(msg(1, { conv: 'fresh', phase: 'greeting' })))
    expect(error).toMatchObject({ code: 'insufficient_auth_level', status: 401 })
    expect(error.message).toMatch(/new conversation .* starts at its peer floor, auth level 2/)
    // A fresh conversation at the floor starts there.
    expect(await levels.admit(msg(2, { conv: 'fresh2' }))).toMatchObject({
      previousLevel: null,
      level: 2,
      escalated: false,
    })
  })

  it('after a level-2 message, refuses an hmac-only level-0 greeting in a fresh conversation', async () => {
    const levels = new AuthLevelTracker()
    await levels.admit(msg(0, { conv: 'intro', phase: 'greeting' }))
    await levels.admit(msg(2, { conv: 'c1' }))
    const error = await refused(
      levels.evaluate(msg(0, { conv: 'fresh', phase: 'greeting', requestedLevel: 0 })),
    )
    expect(error).toMatchObject({ code: 'insufficient_auth_level', status: 401 })
    expect(error.message).toMatch(/hmac-sha256/)
  })

  it('refuses hmac-only messages everywhere, also in a conversation still at level 0', async () => {
    const levels = new AuthLevelTracker()
    await levels.admit(msg(0, { conv: 'intro', phase: 'greeting' }))
    await levels.admit(msg(3, { conv: 'other' }))
    expect(await levels.conversationLevel(ALICE, 'intro')).toBe(0)
    const error = await refused(levels.evaluate(msg(0, { conv: 'intro' })))
    expect(error.code).toBe('insufficient_auth_level')
    // An Ed25519 signature alongside the HMAC one is fine.
    await expect(
      levels.evaluate({ ...msg(1, { conv: 'intro' }), algs: ['hmac-sha256', 'ed25519'] }),
    ).resolves.toMatchObject({ level: 1 })
  })

  it('allows hmac again in a conversation renegotiated down to 0 by a greeting at ≥ the floor', async () => {
    const levels = new AuthLevelTracker()
    await levels.admit(msg(2, { conv: 'c1' }))
    const decision = await levels.admit(
      msg(2, { conv: 'c9', phase: 'greeting', requestedLevel: 0 }),
    )
    expect(decision).toMatchObject({
      previousLevel: null,
      level: 0,
      renegotiated: true,
      peerFloor: 2,
    })
    await expect(levels.admit(msg(0, { conv: 'c9' }))).resolves.toMatchObject({ level: 0 })
    // Still refused in other conversations.
    expect((await refused(levels.evaluate(msg(0, { conv: 'c1' })))).code).toBe(
      'insufficient_auth_level',
    )
    // And refused again once the conversation escalates.
    await levels.admit(msg(2, { conv: 'c9' }))
    expect((await refused(levels.evaluate(msg(0, { conv: 'c9' })))).code).toBe(
      'insufficient_auth_level',
    )
  })

  it('does not let a renegotiation below the later floor readmit hmac', async () => {
    const levels = new AuthLevelTracker()
    await levels.admit(msg(1, { conv: 'c1' }))
    await levels.admit(msg(1, { conv: 'c1', phase: 'greeting', requestedLevel: 0 }))
    await levels.admit(msg(0, { conv: 'c1' }))
    await levels.admit(msg(2, { conv: 'c2' }))
    // c1 was renegotiated by a level-1 greeting, below the floor that now stands.
    expect((await refused(levels.evaluate(msg(0, { conv: 'c1' })))).code).toBe(
      'insufficient_auth_level',
    )
  })

  it('raises the floor to the highest verified level', async () => {
    const levels = new AuthLevelTracker()
    await levels.admit(msg(3))
    await levels.admit(msg(3, { phase: 'greeting', requestedLevel: 2 }))
    expect(await levels.peerFloor(ALICE)).toBe(3)
    expect((await refused(levels.evaluate(msg(2, { conv: 'new' })))).code).toBe(
      'insufficient_auth_level',
    )
  })
})

describe('AuthLevelTracker state handling', () => {
  it('evaluate does not mutate state', async () => {
    const storage = memoryStorage()
    const levels = new AuthLevelTracker({ storage })
    await levels.admit(msg(1))
    const before = await storage.list('')
    expect(await levels.evaluate(msg(3))).toMatchObject({ level: 3, escalated: true })
    expect(await levels.evaluate(msg(1, { conv: 'new' }))).toMatchObject({ previousLevel: null })
    expect(await levels.evaluate(msg(1, { phase: 'greeting', requestedLevel: 0 }))).toMatchObject({
      renegotiated: true,
    })
    expect(await storage.list('')).toEqual(before)
    expect(await levels.conversationLevel(ALICE, 'c1')).toBe(1)
    expect(await levels.conversationLevel(ALICE, 'new')).toBeNull()
    expect(await levels.peerFloor(ALICE)).toBe(0)
  })

  it('commit applies an evaluated decision', async () => {
    const levels = new AuthLevelTracker()
    const decision = await levels.evaluate(msg(2))
    expect(await levels.conversationLevel(ALICE, 'c1')).toBeNull()
    await levels.commit(decision)
    expect(await levels.conversationLevel(ALICE, 'c1')).toBe(2)
    expect(await levels.peerFloor(ALICE)).toBe(2)
  })

  it('commits out of order never lower a level', async () => {
    const levels = new AuthLevelTracker()
    const low = await levels.evaluate(msg(1))
    const high = await levels.evaluate(msg(3))
    await Promise.all([levels.commit(high), levels.commit(low)])
    expect(await levels.conversationLevel(ALICE, 'c1')).toBe(3)
  })

  it('persists levels and floors across instances', async () => {
    const storage = memoryStorage()
    const first = new AuthLevelTracker({ storage })
    await first.admit(msg(3, { conv: 'c1' }))
    await first.admit(msg(1, { conv: 'bob-conv', from: 'bob' }))
    const second = new AuthLevelTracker({ storage })
    expect(await second.conversationLevel(ALICE, 'c1')).toBe(3)
    expect(await second.conversationLevel('bob', 'bob-conv')).toBe(1)
    expect(await second.peerFloor(ALICE)).toBe(3)
    expect(await second.peerFloor('bob')).toBe(0)
    expect((await refused(second.evaluate(msg(2, { conv: 'c1' })))).code).toBe(
      'insufficient_auth_level',
    )
    expect((await refused(second.evaluate(msg(0, { conv: 'fresh' })))).code).toBe(
      'insufficient_auth_level',
    )
  })

  it('keeps the renegotiation across instances', async () => {
    const storage = memoryStorage()
    const first = new AuthLevelTracker({ storage })
    await first.admit(msg(2))
    await first.admit(msg(2, { phase: 'greeting', requestedLevel: 0 }))
    const second = new AuthLevelTracker({ storage })
    await expect(second.admit(msg(0))).resolves.toMatchObject({ level: 0 })
  })

  it('keeps conversation ids with special characters apart', async () => {
    const levels = new AuthLevelTracker()
    await levels.admit(msg(3, { from: 'a', conv: 'b/c' }))
    expect(await levels.conversationLevel('a/b', 'c')).toBeNull()
    expect(await levels.conversationLevel('a', 'b/c')).toBe(3)
  })
})

describe('AuthLevelTracker known contacts', () => {
  it('marks, reports and forgets known contacts, persistently', async () => {
    const storage = memoryStorage()
    const levels = new AuthLevelTracker({ storage, now: () => 1234 })
    expect(await levels.isKnownContact(ALICE)).toBe(false)
    await levels.markKnownContact(ALICE, 'introduced')
    await levels.markKnownContact('bob', 'pinned')
    expect(await levels.isKnownContact(ALICE)).toBe(true)
    expect(await levels.knownContact(ALICE)).toEqual({ how: 'introduced', since: 1234 })
    expect(await new AuthLevelTracker({ storage }).isKnownContact('bob')).toBe(true)
    await levels.forgetContact(ALICE)
    expect(await levels.isKnownContact(ALICE)).toBe(false)
    expect(await levels.isKnownContact('bob')).toBe(true)
    await expect(levels.forgetContact('never')).resolves.toBeUndefined()
  })

  it('is independent of levels: a did:key peer is not known until marked', async () => {
    const levels = new AuthLevelTracker()
    await levels.admit(msg(3, { from: 'did:key:z6Mkexample' }))
    expect(await levels.isKnownContact('did:key:z6Mkexample')).toBe(false)
    await levels.markKnownContact('did:key:z6Mkexample', 'accepted')
    expect(await levels.isKnownContact('did:key:z6Mkexample')).toBe(true)
  })

  it('forgetting a contact keeps its floor', async () => {
    const levels = new AuthLevelTracker()
    await levels.markKnownContact(ALICE, 'pinned')
    await levels.admit(msg(2))
    await levels.forgetContact(ALICE)
    expect(await levels.peerFloor(ALICE)).toBe(2)
  })

  it('rejects an unknown contact source', async () => {
    const levels = new AuthLevelTracker()
    await expect(levels.markKnownContact(ALICE, 'friend' as 'pinned')).rejects.toThrow(TypeError)
  })
})
