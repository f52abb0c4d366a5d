/**
 * The Transport suite itself: it must fail transports that break the contract. Each case wraps
 * the (passing) memory transport with one defect and expects exactly the checks that cover it
 * to fail.
 */

import { createMemoryHub, memoryTransport } from '@agentmsg/conformance'
import type { DeliveryHandler, DeliveryTarget, Transport, TransportFactory } from '@agentmsg/core'
import { describe, expect, it } from 'vitest'
import { runTransportContract, transportCheckNames } from '../src/transport/checks.js'

/** The memory transport with `change` applied to each transport it creates. */
function defective(change: (inner: Transport) => Transport): TransportFactory {
  const factory = memoryTransport(createMemoryHub())
  return {
    protocol: factory.protocol,
    create: async (components) => change(await factory.create(components)),
  }
}

/** The names of the checks that fail for `factory`. */
async function failing(factory: TransportFactory): Promise<string[]> {
  const results = await runTransportContract({ factory, delivery: 'direct' })
  expect(results.map((r) => r.name)).toEqual(transportCheckNames('direct'))
  return results.filter((r) => !r.ok).map((r) => r.name)
}

const wrap = (inner: Transport, over: Partial<Transport>): Transport => ({
  protocol: inner.protocol,
  targets: (peer) => inner.targets!(peer),
  send: (m, t, o) => inner.send(m, t, o),
  listen: (r, o) => inner.listen!(r, o),
  close: () => inner.close(),
  ...over,
})

describe('testTransport / runTransportContract', () => {
  it('passes the memory transport as it is', async () => {
    expect(await failing(memoryTransport(createMemoryHub()))).toEqual([])
  })

  it('fails a transport that sends to any kind', async () => {
    const factory = defective((inner) =>
      wrap(inner, { send: (m, t, o) => inner.send(m, { ...t, kind: 'memory' }, o) }),
    )
    expect(await failing(factory)).toEqual([
      'rejects a send to a kind it does not serve, and delivers nothing',
    ])
  })

  it('fails a transport that delivers each message twice', async () => {
    const factory = defective((inner) =>
      wrap(inner, {
        listen: (receive, o) =>
          inner.listen!(async (d) => {
            await receive(d)
            return receive(d)
          }, o),
      }),
    )
    expect(await failing(factory)).toEqual(
      expect.arrayContaining([
        'listen hands each message to receive once, as sent, naming its protocol',
        'does not deliver an accepted message again, also when the agent listens again',
      ]),
    )
  })

  it('fails a transport that names another protocol on deliveries', async () => {
    const factory = defective((inner) =>
      wrap(inner, {
        listen: (receive, o) => inner.listen!((d) => receive({ ...d, transport: 'other' }), o),
      }),
    )
    expect(await failing(factory)).toEqual([
      'listen hands each message to receive once, as sent, naming its protocol',
    ])
  })

  it('fails a transport that hides refusals from the sender', async () => {
    const factory = defective((inner) =>
      wrap(inner, {
        send: (m, t, o) =>
          inner.send(m, t, o).catch(() => ({ messageId: m.message_id, target: t })),
      }),
    )
    expect(await failing(factory)).toContain(
      'a refusal reaches the sender: send rejects with its code; no redelivery',
    )
  })

  it('fails a transport that keeps working after close', async () => {
    const factory = defective((inner) => wrap(inner, { close: async () => {} }))
    expect(await failing(factory)).toEqual([
      'delivers nothing to an agent after its transport closed',
      'rejects a send after close, and delivers nothing',
    ])
  })

  it('fails a transport that alters the message', async () => {
    const factory = defective((inner) =>
      wrap(inner, {
        listen: (receive: DeliveryHandler, o) =>
          inner.listen!((d) => {
            const message = JSON.parse(new TextDecoder().decode(d.body as Uint8Array))
            return receive({ ...d, body: { ...message, extra: 1 } })
          }, o),
      }),
    )
    expect(await failing(factory)).toEqual([
      'listen hands each message to receive once, as sent, naming its protocol',
    ])
  })

  it('fails a transport that finds targets for agents it cannot reach', async () => {
    const factory = defective((inner) =>
      wrap(inner, {
        targets: (peer) => [{ kind: 'memory', agent: peer.agent, urls: [], route: 'direct' }],
      }),
    )
    expect(await failing(factory)).toEqual(['finds no target for a peer it knows nothing of'])
  })

  it('fails a transport whose targets name another agent or no route', async () => {
    const factory = defective((inner) =>
      wrap(inner, {
        targets: async (peer) => {
          const found = await inner.targets!(peer)
          const other = { kind: 'memory', agent: 'did:key:z6MkOther', urls: [] }
          return found.length > 0 ? [...found, other as unknown as DeliveryTarget] : []
        },
      }),
    )
    expect(await failing(factory)).toEqual([
      'finds targets for a peer it can reach: for that agent, with a kind and a route',
    ])
  })

  it('fails a transport that sends in spite of an aborted signal', async () => {
    const factory = defective((inner) => wrap(inner, { send: (m, t) => inner.send(m, t) }))
    expect(await failing(factory)).toEqual([
      'rejects a send whose signal is aborted with its reason, and delivers nothing',
    ])
  })
})
