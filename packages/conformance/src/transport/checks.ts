/**
 * The Transport checks: what core's `Transport` contract promises (plain assertions), run
 * without a test runner (`testTransport` runs each under vitest).
 */
import {
  AgentMsgError,
  type DeliveryOutcome,
  type Message,
  type PeerRoute,
  type TransportComponents,
  type TransportFactory,
} from '@agentmsg/core'
import { describeError } from '@agentmsg/core/http'
import { type CheckResult, checkList, equal, ok, rejects, runChecks } from '../assert.js'
import { type FixtureAgent, fixtureAgent, signedMessage } from '../fixtures.js'
import { type Answer, accept, type Peer, PeerSet } from './peers.js'

/** The transport under test and what a sender knows of the agents it reaches. */
export interface TransportHarness {
  /** Builds the transport of one agent (the suite makes one per agent and restart). */
  factory: TransportFactory
  /**
   * `direct` (an inbox): `send` settles with the receiver's outcome (a refusal's `code`), no
   * redelivery. `stored` (a relay): resolves once stored; `retry: true` is delivered again.
   */
  delivery: 'direct' | 'stored'
  /** What a sender knows of `agent`; it sends to the first target. @default { agent, relays } */
  peer?(agent: string): PeerRoute | Promise<PeerRoute>
  /** The agents' relays (`components.relays`). @default [] */
  relays?: readonly string[]
  /** Replace parts of the components the suite builds for `agent` (fresh did:key agents). */
  components?(agent: FixtureAgent): Partial<TransportComponents>
  /** How long to wait for a delivery before the check fails, ms. @default 10_000 */
  timeoutMs?: number
}

/** The names of the checks for a transport of the `delivery` model, in order. */
export function transportCheckNames(delivery: TransportHarness['delivery']): string[] {
  return transportChecks(delivery).map(([name]) => name)
}

/** Run the Transport checks (`only` these) and report each, a failure with `onError`'s reports. */
export function runTransportContract(
  harness: TransportHarness,
  only?: readonly string[],
): Promise<CheckResult[]> {
  return runChecks(transportChecks(harness.delivery), only, async (check) => {
    const peers = new PeerSet(harness)
    try {
      await check(peers)
      if (peers.problems.length > 0) throw peers.problems[0]
    } catch (err) {
      const reported = peers.errors.map(describeError).join('; ')
      throw new Error(describeError(err) + (reported ? ` (onError: ${reported})` : ''))
    } finally {
      await peers.closeAll().catch(() => undefined)
    }
  })
}

/** One check; throws on failure. */
export type TransportCheck = (peers: PeerSet) => Promise<void>

/** A kind no transport serves. */
const UNSERVED_KIND = 'conformance-unserved-kind'

/** Every check for a transport of the `delivery` model, in order. */
export function transportChecks(delivery: 'direct' | 'stored'): Array<[string, TransportCheck]> {
  const [list, it] = checkList<TransportCheck>()
  it('names its protocol', async (peers) => {
    const { transport } = await peers.peer()
    ok(typeof transport.protocol === 'string' && transport.protocol !== '', 'protocol is empty')
  })
  it('finds targets for a peer it can reach: for that agent, with a kind and a route', async (peers) => {
    const { alice, bob } = await pair(peers)
    const targets = await alice.targets(bob)
    ok(Array.isArray(targets) && targets.length > 0, 'no targets')
    for (const target of targets) {
      ok(typeof target.kind === 'string' && target.kind !== '', 'target.kind is empty')
      equal(target.agent, bob.agent.id, 'target.agent')
      ok(Array.isArray(target.urls), 'target.urls is not an array')
      ok(target.route === 'direct' || target.route === 'relay', `route ${target.route}`)
    }
  })
  it('finds no target for a peer it knows nothing of', async (peers) => {
    const { transport } = await peers.peer()
    const stranger = await fixtureAgent()
    const targets = await transport.targets?.({ agent: stranger.id, relays: [] })
    equal(targets, [], 'targets of an unknown peer')
  })
  it('send resolves with a receipt for the message and the target', async (peers) => {
    const { alice, target, message } = await pair(peers)
    const receipt = await alice.transport.send(message, target)
    equal(receipt.messageId, message.message_id, 'receipt.messageId')
    equal(receipt.target.kind, target.kind, 'receipt.target.kind')
    equal(receipt.target.agent, target.agent, 'receipt.target.agent')
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
      const codes = errors.map((e) => (e as { code?: unknown }).code)
      equal(codes, ['forbidden', 'unavailable'], 'error codes')
      await marker(alice, bob)
      equal([bob.count(forbidden.message_id), bob.count(busy.message_id)], [1, 1], 'deliveries')
    })
  } else {
    it('does not deliver a message refused without retry again', async (peers) => {
      await notAgain(peers, () => refusal('forbidden', false))
    })
    it('delivers a message refused with retry: true again', async (peers) => {
      const answer: Answer = (m, count) => (count === 1 ? refusal('unavailable', true) : accept(m))
      const { alice, bob, target, message } = await pair(peers, answer)
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
    const { alice, bob, target, message } = await pair(peers)
    const other = { ...target, kind: UNSERVED_KIND }
    await rejects(alice.transport.send(message, other), `send to a ${UNSERVED_KIND} target`)
    await marker(alice, bob)
    equal(bob.count(message.message_id), 0, 'deliveries')
  })
  it('rejects a send whose signal is aborted with its reason, and delivers nothing', async (peers) => {
    const { alice, bob, target, message } = await pair(peers)
    const reason = new Error('conformance: aborted')
    const signal = AbortSignal.abort(reason)
    const error = await rejects(alice.transport.send(message, target, { signal }), 'aborted send')
    ok(error === reason, `rejected with ${String(error)}, not the signal's reason`)
    await marker(alice, bob)
    equal(bob.count(message.message_id), 0, 'deliveries')
  })
  it('delivers nothing to an agent after its transport closed', async (peers) => {
    const { alice, bob, target, message } = await pair(peers)
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
    const listeners = bob.received
      .filter((r) => r.message.message_id === message.message_id)
      .map((r) => r.listener)
    equal(listeners, [2], 'listeners that got it')
  })
  it('rejects a send after close, and delivers nothing', async (peers) => {
    const { alice, bob, target, message } = await pair(peers)
    await alice.close()
    await rejects(alice.transport.send(message, target), 'send after close')
    await marker(await peers.peer(), bob)
    equal(bob.count(message.message_id), 0, 'deliveries')
  })

  return list
}

/** Two agents; bob listens with `answer` and `target` is alice's first target for him. */
async function pair(peers: PeerSet, answer: Answer = accept) {
  const alice = await peers.peer()
  const bob = await peers.peer()
  await bob.listen(answer)
  const message = await signedMessage(alice.agent, bob.agent.id)
  return { alice, bob, target: await alice.target(bob), message }
}

/** A message answered with `answer` is delivered once, also when the agent listens again. */
async function notAgain(peers: PeerSet, answer: Answer): Promise<void> {
  const plan = new Set<string>()
  const { alice, bob, target, message } = await pair(peers, (m, n) =>
    plan.has(m.message_id) ? answer(m, n) : accept(m),
  )
  plan.add(message.message_id)
  await alice.transport.send(message, target)
  await bob.waitFor(message.message_id)
  await bob.restart()
  await bob.listen()
  await marker(alice, bob)
  equal(bob.count(message.message_id), 1, 'deliveries')
}

/** Send one more message and wait for it: what was still to come (in order) has come by then. */
async function marker(from: Peer, to: Peer): Promise<void> {
  const message = await signedMessage(from.agent, to.agent.id, { text: 'marker' })
  await from.transport.send(message, await from.target(to))
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
