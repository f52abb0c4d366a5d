/**
 * Issue 9, item 17, against a real inbox on loopback: the replay guard's capacity is shared by
 * all senders, so it is partitioned per client-address bucket (PROFILE §6, no shared bucket).
 * One address may use the room nobody else needs up to half the guard; past that it is refused
 * alone (429 `rate_limited`), and messages from another address are still accepted. The guard
 * is given a small capacity (64 ids, so a share of 4 at the default 1/16) where the default
 * million would take an hour of messages.
 */
import { fixtureAgent, signedMessage } from '@agentmsg/conformance'
import { ReplayGuard } from '@agentmsg/core/receive'
import { afterEach, describe, expect, it } from 'vitest'
import { startInbox, stopInboxes, until } from './inbox-helpers.js'
import { postFrom } from './slow-client-helpers.js'

afterEach(stopInboxes)

describe('replay guard shares per address bucket', () => {
  it('one address fills its share and is refused; another address is still accepted', async () => {
    const replayGuard = new ReplayGuard({ maxEntries: 64 })
    const inbox = await startInbox({ replayGuard })
    const statuses: number[] = []
    // The attacker: 64 new messages (one sender each, so no per-sender limit applies) from
    // 127.0.0.1, enough to fill the whole guard if it were shared.
    for (let i = 0; i < 64; i++) {
      const sender = await fixtureAgent()
      const r = await postFrom(inbox.inboxUrl, await signedMessage(sender, inbox.agentId))
      statuses.push(r?.status ?? 0)
      if (r?.status === 429) {
        expect(r.json?.code).toBe('rate_limited')
        expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1)
      }
    }
    // Alone, it may use the room nobody else needs, up to half the guard; then its share binds.
    expect(statuses.slice(0, 32).every((s) => s === 202)).toBe(true)
    expect(statuses.slice(32).every((s) => s === 429)).toBe(true)
    expect(replayGuard.size).toBe(32)
    // Everyone else: a message from 127.0.0.2 is accepted and processed.
    const alice = await fixtureAgent()
    const m = await signedMessage(alice, inbox.agentId)
    const r = await postFrom(inbox.inboxUrl, m, '127.0.0.2')
    expect(r?.status).toBe(202)
    // A replay of an accepted message is still a duplicate (202), from any address.
    expect((await postFrom(inbox.inboxUrl, m, '127.0.0.1'))?.status).toBe(202)
    await until(() => inbox.received.some((x) => x.message.message_id === m.message_id))
    expect(inbox.received.filter((x) => x.message.message_id === m.message_id)).toHaveLength(1)
  })
})
