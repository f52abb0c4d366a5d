/**
 * The Transport checks: what core's `Transport` contract promises, tested through two (or
 * three) agents that each run the transport under test. Plain assertions, any runner.
 */
import { AgentMsgError, type DeliveryOutcome, type Message } from '@agentmsg/core'
import { equal, ok, rejects } from '../assert.js'
import { signedMessage } from '../fixtures.js'
import type { TransportDeliveryModel } from './harness.js'
import { type Answer, accept, type Peer, type PeerSet } from './peers.js'

/** One check; throws on failure. */
export type TransportCheck = (peers: PeerSet) => Promise<void>

/** A kind no transport serves. */
const UNSERVED_KIND = 'conformance-unserved-kind'

/** Every check for a transport of the `delivery` model, in order. */
export function transportChecks(delivery: TransportDeliveryModel): Array<[string, TransportCheck]> {
  const list: Array<[string, TransportCheck]> = []
  const it = (name: string, check: TransportCheck): void => {
    list.push([name, check])
  }

  it('names its protocol and the kinds it sends to', async (peers) => {
    const { transport } = await peers.peer()
    ok(typeof transport.protocol === 'string' && transport.protocol !== '', 'protocol is empty')
    ok(Array.isArray(transport.kinds) && transport.kinds.length > 0, 'kinds is empty')
    for (const kind of transport.kinds)
      ok(typeof kind === 'string' && kind !== '', 'a kind is empty')
  })

  it('routes, when it can, to a target of its own kinds for the agent', async (peers) => {
    const { alice, bob, target } = await pair(peers)
    ok(alice.transport.kinds.includes(target.kind), `kinds does not include ${target.kind}`)
    equal(target.agent, bob.agent.id, 'target.agent')
    ok(Array.isArray(target.urls), 'target.urls is not an array')
    const routed = await alice.transport.route?.(bob.agent.id)
    if (routed) {
      ok(alice.transport.kinds.includes(routed.kind), `route gave kind ${routed.kind}`)
      equal(routed.agent, bob.agent.id, 'route(agent).agent')
    }
  })

  it('send resolves with a receipt for the message and the target', async (peers) => {
    const { alice, bob, target } = await pair(peers)
    const message = await signedMessage(alice.agent, bob.agent.id)
    const receipt = await alice.transport.send(message, target)
    equal(receipt.messageId, message.message_id, 'receipt.messageId')
    equal(receipt.target.kind, target.kind, 'receipt.target.kind')
    equal(receipt.target.agent, target.agent, 'receipt.target.agent')
    ok(receipt.pending !== true, 'pending without durable')
  })

  it('listen hands each message to receive once, as sent, naming its protocol', async (peers) => {
    const { alice, bob, target } = await pair(peers)
    const sent = [
      await signedMessage(alice.agent, bob.agent.id, { text: 'first' }),
      await signedMessage(alice.agent, bob.agent.id, { text: 'second é 𝄞' }),
    ]
    for (const message of sent) await alice.transport.send(message, target)
    for (const message of sent) await bob.waitFor(message.message_id)
    await marker(alice, bob)
    for (const message of sent) {
      equal(bob.count(message.message_id), 1, 'deliveries')
      const got = bob.received.find((r) => r.message.message_id === message.message_id)!
      equal(got.delivery.transport, bob.transport.protocol, 'delivery.transport')
      // A relay appends its trace entry (PROFILE §9); everything else arrives as signed.
      equal(withoutTrace(got.message), withoutTrace(message), 'the delivered message')
    }
  })

  it('does not deliver an accepted message again, also when the agent listens again', async (peers) => {
    await notAgain(peers, accept)
  })

  it('does not deliver a message answered duplicate again', async (peers) => {
    await notAgain(peers, (m) => ({ status: 'duplicate', messageId: m.message_id }))
  })

  if (delivery === 'direct') {
    it('a refusal reaches the sender: send rejects with its code; no redelivery', async (peers) => {
      const plan = new Map<string, DeliveryOutcome>()
      const { alice, bob, target } = await pair(peers, (m) => plan.get(m.message_id) ?? accept(m))
      const forbidden = await signedMessage(alice.agent, bob.agent.id)
      const busy = await signedMessage(alice.agent, bob.agent.id)
      plan.set(forbidden.message_id, refusal('forbidden', false))
      plan.set(busy.message_id, refusal('unavailable', true))
      const errors = [
        await rejects(alice.transport.send(forbidden, target), 'send of a refused message'),
        await rejects(alice.transport.send(busy, target), 'send of a refused message'),
      ]
      equal(
        errors.map((e) => (e as { code?: unknown }).code),
        ['forbidden', 'unavailable'],
        'error codes',
      )
      await marker(alice, bob)
      equal([bob.count(forbidden.message_id), bob.count(busy.message_id)], [1, 1], 'deliveries')
    })
  } else {
    it('does not deliver a message refused without retry again', async (peers) => {
      await notAgain(peers, () => refusal('forbidden', false))
    })

    it('delivers a message refused with retry: true again', async (peers) => {
      const answer: Answer = (m, count) => (count === 1 ? refusal('unavailable', true) : accept(m))
      const { alice, bob, target } = await pair(peers, answer)
      const message = await signedMessage(alice.agent, bob.agent.id)
      await alice.transport.send(message, target)
      await bob.waitFor(message.message_id)
      await bob.restart()
      await bob.listen(answer)
      await bob.waitFor(message.message_id, 2)
      // Accepted the second time: then it is done.
      await marker(alice, bob)
      equal(bob.count(message.message_id), 2, 'deliveries')
    })
  }

  it('rejects a send to a kind it does not serve, and delivers nothing', async (peers) => {
    const { alice, bob, target } = await pair(peers)
    ok(!alice.transport.kinds.includes(UNSERVED_KIND), `the transport serves ${UNSERVED_KIND}`)
    const message = await signedMessage(alice.agent, bob.agent.id)
    await rejects(
      alice.transport.send(message, { ...target, kind: UNSERVED_KIND }),
      `send to a ${UNSERVED_KIND} target`,
    )
    await marker(alice, bob)
    equal(bob.count(message.message_id), 0, 'deliveries')
  })

  it('delivers nothing to an agent after its transport closed', async (peers) => {
    const { alice, bob, target } = await pair(peers)
    const message = await signedMessage(alice.agent, bob.agent.id)
    await bob.close()
    if (delivery === 'direct') {
      // Nobody answers for the closed agent.
      await rejects(alice.transport.send(message, target), 'send to a closed agent')
      equal(bob.count(message.message_id), 0, 'deliveries')
      return
    }
    // Stored: it waits for the agent's next transport, not the closed one.
    await alice.transport.send(message, target)
    await bob.restart()
    await bob.listen()
    await bob.waitFor(message.message_id)
    equal(
      bob.received
        .filter((r) => r.message.message_id === message.message_id)
        .map((r) => r.listener),
      [2],
      'listeners that got it',
    )
  })

  it('rejects a send after close, and delivers nothing', async (peers) => {
    const { alice, bob, target } = await pair(peers)
    const message = await signedMessage(alice.agent, bob.agent.id)
    await alice.close()
    await rejects(alice.transport.send(message, target), 'send after close')
    await marker(await peers.peer(), bob)
    equal(bob.count(message.message_id), 0, 'deliveries')
  })

  return list
}

/** Two agents; bob listens with `answer` and `target` is where he receives. */
async function pair(peers: PeerSet, answer: Answer = accept) {
  const alice = await peers.peer()
  const bob = await peers.peer()
  await bob.listen(answer)
  return { alice, bob, target: await bob.target() }
}

/**
 * A message answered with `answer` is delivered once: not again to the same listener, nor
 * after the agent listens again with a new transport.
 */
async function notAgain(peers: PeerSet, answer: Answer): Promise<void> {
  const plan = new Set<string>()
  const { alice, bob, target } = await pair(peers, (m, n) =>
    plan.has(m.message_id) ? answer(m, n) : accept(m),
  )
  const message = await signedMessage(alice.agent, bob.agent.id)
  plan.add(message.message_id)
  await alice.transport.send(message, target)
  await bob.waitFor(message.message_id)
  await bob.restart()
  await bob.listen()
  await marker(alice, bob)
  equal(bob.count(message.message_id), 1, 'deliveries')
}

/**
 * Send one more message and wait for it: with deliveries in order, anything that was going to
 * be delivered (again) before it has been by then.
 */
async function marker(from: Peer, to: Peer): Promise<void> {
  const message = await signedMessage(from.agent, to.agent.id, { text: 'marker' })
  await from.transport.send(message, await to.target())
  await to.waitFor(message.message_id)
}

function refusal(code: 'forbidden' | 'unavailable', retry: boolean): DeliveryOutcome {
  return { status: 'refused', error: new AgentMsgError(code, `conformance: ${code}`), retry }
}

/** The message as JSON, without `trace`. */
function withoutTrace(message: Message): unknown {
  const { trace: _trace, ...rest } = JSON.parse(JSON.stringify(message)) as Message
  return rest
}
