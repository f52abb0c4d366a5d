/**
 * Which introduction token a level-0 send signs with (PROFILE §5: a token introduces one peer).
 * With several tokens held, the one that introduces the recipient is used; a token that
 * introduces somebody else never is.
 */
import { createMemoryHub, memoryTransport } from '@agentmsg/conformance'
import { createIntroductionToken } from '@agentmsg/core'
import { afterEach, describe, expect, it } from 'vitest'
import { type Agent, createAgent, type ReceivedMessage } from '../src/index.js'

const open: Agent[] = []
afterEach(async () => {
  for (const a of open.splice(0)) await a.close()
})

async function agentOn(hub: ReturnType<typeof createMemoryHub>): Promise<Agent> {
  const agent = await createAgent({ transports: [memoryTransport(hub)] })
  open.push(agent)
  return agent
}

describe('level-0 sends with several introduction tokens', () => {
  it('sign with the token that introduces the recipient', async () => {
    const hub = createMemoryHub()
    const [alice, bob, carol] = [await agentOn(hub), await agentOn(hub), await agentOn(hub)]
    const forBob = createIntroductionToken()
    const forCarol = createIntroductionToken()
    await alice.introduce(forCarol, { agent: carol.id })
    await alice.introduce(forBob, { agent: bob.id })
    await bob.introduce(forBob, { agent: alice.id })
    const got = new Promise<ReceivedMessage>((resolve) => bob.on('message', resolve))
    await alice.send(bob.id, 'hello at level 0', { authLevel: 0 })
    const m = await got
    expect(m.level).toBe(0)
    expect(m.source).toBe('shared-secret')
    expect(m.knownContact).toBe(true)
  })

  it('refuse to guess when no held token introduces the recipient', async () => {
    const hub = createMemoryHub()
    const [alice, bob, carol] = [await agentOn(hub), await agentOn(hub), await agentOn(hub)]
    await alice.introduce(createIntroductionToken(), { agent: carol.id })
    await expect(alice.send(bob.id, 'hi', { authLevel: 0 })).rejects.toThrow(/introduction token/)
  })
})
