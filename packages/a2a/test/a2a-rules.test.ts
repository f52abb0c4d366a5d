/**
 * The binding's rules for what goes wrong (README "How A2A maps onto agentmsg"), with real
 * relays: answers out of order and duplicated are handed over once each, in order; a relay that
 * is down is failed over in both directions; a caller that hangs up stops the stream while the
 * task runs on; a flood of answers ahead of a gap fails the call.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { type StreamResponse, TaskState, taskStateToJSON } from '@a2a-js/sdk'
import { ClientFactory, ClientFactoryOptions } from '@a2a-js/sdk/client'
import type { Agent } from '@agentmsg/client'
import { createAddressPolicy, createNodeAgent, type NodeAgent } from '@agentmsg/client/node'
import { publicKeyFromDidKey } from '@agentmsg/core'
import { createDevCertificate, type DevCertificate } from '@agentmsg/dev-tls'
import { memoryRelayStore, type RelayServer, serveRelay } from '@agentmsg/relay'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CallReplies } from '../src/calls.js'
import { agentmsgInterface, agentmsgTransportFactory, serveA2A } from '../src/index.js'
import { a2aContent, a2aPayload } from '../src/wire.js'
import { echoHandler, userMessage } from './echo-executor.js'

let cert: DevCertificate
let dir: string
const closers: Array<() => Promise<unknown>> = []

beforeAll(async () => {
  cert = await createDevCertificate()
  dir = await mkdtemp(path.join(tmpdir(), 'agentmsg-a2a-rules-'))
})
afterAll(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => {})
  await rm(dir, { recursive: true, force: true })
})

async function relay(): Promise<RelayServer> {
  const r = await serveRelay({
    port: 0,
    dataDir: await mkdtemp(path.join(dir, 'relay-')),
    tls: { cert: cert.cert, key: cert.key },
    ca: cert.ca,
    allowPrivate: ['127.0.0.1'],
    store: memoryRelayStore(),
    onError: () => {},
  })
  closers.push(() => r.close())
  return r
}

async function agent(relays: string[]): Promise<NodeAgent> {
  const a = await createNodeAgent({
    relays,
    ca: cert.ca,
    addressPolicy: createAddressPolicy({ allow: ['127.0.0.1'] }),
    onError: () => {},
  })
  closers.push(() => a.close())
  return a
}

const clientFor = (a: Agent, card: Parameters<ClientFactory['createFromAgentCard']>[0]) =>
  new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [agentmsgTransportFactory(a, { idleTimeoutMs: 20_000 })],
    }),
  ).createFromAgentCard(card)

describe('answers of one call', () => {
  const payload = (n: number) => ({
    phase: 'update' as const,
    rpc: { n },
    serviceParameters: {},
    index: n,
  })

  it('are handed over in index order, each once', async () => {
    const replies = new CallReplies('did:key:z6Mkpeer')
    replies.add(2, payload(2))
    replies.add(0, payload(0))
    replies.add(0, payload(0)) // a duplicate of one not yet handed over
    const first = await replies.next(1000)
    replies.add(0, payload(0)) // a duplicate of one handed over
    replies.add(1, payload(1))
    const rest = [await replies.next(1000), await replies.next(1000)]
    expect([first, ...rest].map((p) => p.rpc.n)).toEqual([0, 1, 2])
    await expect(replies.next(50)).rejects.toMatchObject({ code: 'unavailable' })
  })

  it('a flood ahead of a gap fails the call instead of growing without bound', async () => {
    const replies = new CallReplies('did:key:z6Mkpeer')
    for (let i = 1; i <= 257; i++) replies.add(i, payload(i))
    await expect(replies.next(1000)).rejects.toMatchObject({ code: 'rate_limited' })
  })
})

describe('the binding over real relays', () => {
  it('answers sent out of order and twice reach the stock client once each, in order', async () => {
    const r = await relay()
    const [caller, callee] = [await agent([r.url]), await agent([r.url])]
    // A hand-written callee: it answers a stream with index 1 before 0, and 0 twice.
    callee.on('message', async (m) => {
      const p = a2aPayload(m)
      if (p?.phase !== 'request') return
      const event = (state: TaskState) => ({
        jsonrpc: '2.0',
        id: p.rpc.id,
        result: {
          statusUpdate: {
            taskId: 't1',
            contextId: 'c1',
            status: { state: taskStateToJSON(state) },
          },
        },
      })
      const send = (rpc: unknown, index: number, phase: 'update' | 'close') =>
        callee.reply(m, a2aContent(rpc, { index }), { phase })
      await send(event(TaskState.TASK_STATE_COMPLETED), 1, 'update')
      await send(event(TaskState.TASK_STATE_WORKING), 0, 'update')
      await send(event(TaskState.TASK_STATE_WORKING), 0, 'update')
      await send({ jsonrpc: '2.0', method: 'agentmsg/close', params: { id: p.rpc.id } }, 2, 'close')
    })
    const { card } = echoHandler(callee, [r.url])
    const states: TaskState[] = []
    const client = await clientFor(caller, card)
    for await (const e of client.sendMessageStream(userMessage('x', 'm-o'))) {
      if (e.payload?.$case === 'statusUpdate') states.push(e.payload.value.status!.state)
    }
    expect(states).toEqual([TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_COMPLETED])
  })

  it('a relay that is down is failed over: the request and every answer go through the other', async () => {
    const [down, up] = [await relay(), await relay()]
    const caller = await agent([down.url, up.url])
    const worker = await agent([down.url, up.url])
    await worker.contacts.pin(caller.id, publicKeyFromDidKey(caller.id))
    const { card, handler } = echoHandler(worker, [down.url, up.url])
    const server = serveA2A(worker, handler)
    closers.push(() => server.close())
    await down.close()
    const client = await clientFor(caller, card)
    const events: StreamResponse[] = []
    for await (const e of client.sendMessageStream(userMessage('over the other relay', 'm-f')))
      events.push(e)
    expect(events.map((e) => e.payload?.$case)).toEqual([
      'task',
      'statusUpdate',
      'artifactUpdate',
      'statusUpdate',
    ])
    expect(card.supportedInterfaces[0]).toEqual(agentmsgInterface(worker.id, [down.url, up.url]))
  })

  it('a caller that hangs up stops the stream; the task runs on and can be cancelled', async () => {
    const r = await relay()
    const [caller, worker] = [await agent([r.url]), await agent([r.url])]
    await worker.contacts.pin(caller.id, publicKeyFromDidKey(caller.id))
    const { card, handler } = echoHandler(worker, [r.url])
    const server = serveA2A(worker, handler)
    closers.push(() => server.close())
    const hungUp = new Promise<string>((resolve) =>
      worker.on('message', (m) => {
        if (a2aPayload(m)?.phase === 'close') resolve(m.conversationId)
      }),
    )
    const client = await clientFor(caller, card)
    let taskId = ''
    for await (const e of client.sendMessageStream(userMessage('slow', 'm-h'))) {
      if (e.payload?.$case === 'task') taskId = e.payload.value.id
      break // the caller stops reading after the first event
    }
    const conversation = await hungUp
    const after: string[] = []
    caller.on('message', (m) => {
      if (m.conversationId === conversation) after.push(m.message.phase)
    })
    const task = await client.getTask({ tenant: '', id: taskId, historyLength: undefined })
    expect(task.status?.state).toBe(TaskState.TASK_STATE_WORKING) // it runs on
    const cancelled = await client.cancelTask({ tenant: '', id: taskId, metadata: undefined })
    expect(cancelled.status?.state).toBe(TaskState.TASK_STATE_CANCELED)
    // The canceled status went to nobody's stream: the hung-up call got nothing more.
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(after).toEqual([])
  })

  it('a stranger is refused once a minute, no more: minted ids cannot make the agent a reflector', async () => {
    const r = await relay()
    const [stranger, worker] = [await agent([r.url]), await agent([r.url])]
    const { card, handler, executor } = echoHandler(worker, [r.url])
    const server = serveA2A(worker, handler)
    closers.push(() => server.close())
    const client = await new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [agentmsgTransportFactory(stranger, { idleTimeoutMs: 1500 })],
      }),
    ).createFromAgentCard(card)
    const call = () => client.sendMessage(userMessage('hi', 'm-s')).catch((e: Error) => e.message)
    expect(await call()).toMatch(/^unknown_sender: /)
    expect(await call()).toMatch(/^unavailable: no answer from /)
    expect(executor.executed).toBe(0)
  })
})
