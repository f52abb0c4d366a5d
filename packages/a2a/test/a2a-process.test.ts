/**
 * A stock a2a-js client reaches a stock a2a-js `AgentExecutor` that has no inbox, only a relay,
 * running in its own process: `message/send` and `message/stream` with the task's status
 * updates and artifacts, a task cancelled mid-stream, push notifications over agentmsg; and
 * the attacks (tampering, replay, an unknown sender) refused with A2A errors that say why.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { AgentCard, SendMessageRequest, type StreamResponse, TaskState } from '@a2a-js/sdk'
import { type Client, ClientFactory, ClientFactoryOptions } from '@a2a-js/sdk/client'
import { A2AError } from '@a2a-js/sdk/errors'
import { createAddressPolicy, createNodeAgent, type NodeAgent } from '@agentmsg/client/node'
import { createDevCertificate, type DevCertificate } from '@agentmsg/dev-tls'
import { memoryRelayStore, type RelayServer, serveRelay } from '@agentmsg/relay'
import { createNodeFetch } from '@agentmsg/transport-https/node'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  AGENTMSG_REFUSED,
  agentmsgInterface,
  agentmsgTransportFactory,
  onA2APush,
} from '../src/index.js'
import { userMessage } from './echo-executor.js'

const EXECUTOR = fileURLToPath(new URL('./executor-process.ts', import.meta.url))
const network = { addressPolicy: createAddressPolicy({ allow: ['127.0.0.1'] }) }

let cert: DevCertificate
let relay: RelayServer
let dir: string
let executor: ChildProcess
let lines: AsyncIterator<string>
let card: AgentCard
const agents: NodeAgent[] = []

async function agent(options: { fetch?: typeof fetch } = {}) {
  const a = await createNodeAgent({
    relays: [relay.url],
    ...(options.fetch ? { fetch: options.fetch } : { ca: cert.ca, ...network }),
  })
  agents.push(a)
  return a
}

/** A stock `ClientFactory` that knows the agentmsg transport, for `a`. */
const clientFor = (a: NodeAgent): Promise<Client> =>
  new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [agentmsgTransportFactory(a, { idleTimeoutMs: 30_000 })],
    }),
  ).createFromAgentCard(card)

/** The executor's next `{"executed": n}` line. */
async function executed(): Promise<number> {
  const { value } = await lines.next()
  return (JSON.parse(value as string) as { executed: number }).executed
}

let alice: NodeAgent
const captured: string[] = []
beforeAll(async () => {
  cert = await createDevCertificate()
  dir = await mkdtemp(path.join(tmpdir(), 'agentmsg-a2a-'))
  relay = await serveRelay({
    port: 0,
    dataDir: path.join(dir, 'relay'),
    tls: { cert: cert.cert, key: cert.key },
    ca: cert.ca,
    allowPrivate: ['127.0.0.1'],
    store: memoryRelayStore(),
    onError: () => {},
  })
  const plain = createNodeFetch({ ca: cert.ca, ...network, timeoutMs: 10_000 })
  // alice's requests as a relay operator sees them: signed, sealed, and replayable.
  alice = await agent({
    fetch: async (input, init) => {
      if (String(input).endsWith('/relay/publish') && typeof init?.body === 'string')
        captured.push(init.body)
      return plain(input, init)
    },
  })
  const config = {
    relay: relay.url,
    ca: cert.ca,
    dir: path.join(dir, 'executor'),
    contacts: [alice.id],
  }
  executor = spawn(
    process.execPath,
    ['--conditions=@agentmsg/source', '--import', 'tsx', EXECUTOR],
    {
      env: { ...process.env, A2A_EXECUTOR: JSON.stringify(config) },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  )
  lines = createInterface({ input: executor.stdout! })[Symbol.asyncIterator]()
  const first = await lines.next()
  card = AgentCard.fromJSON((JSON.parse(first.value as string) as { card: never }).card)
}, 60_000)

afterAll(async () => {
  executor?.kill('SIGTERM')
  if (executor) await once(executor, 'exit')
  await Promise.all(agents.map((a) => a.close()))
  await relay.close()
  await rm(dir, { recursive: true, force: true })
})

/** `request` asking for push notifications to `url` with `token`. */
function withPushTo(request: SendMessageRequest, url: string, token: string): SendMessageRequest {
  const config = { tenant: '', id: '', taskId: '', url, token, authentication: undefined }
  return {
    ...request,
    configuration: {
      acceptedOutputModes: [],
      taskPushNotificationConfig: config,
      historyLength: undefined,
      returnImmediately: true,
    },
  }
}

const textOf = (events: StreamResponse[]) =>
  events.flatMap((e) =>
    e.payload?.$case === 'artifactUpdate'
      ? (e.payload.value.artifact?.parts ?? []).map((p) =>
          p.content?.$case === 'text' ? p.content.value : '',
        )
      : [],
  )

describe('A2A over agentmsg, executor in another process behind a relay', () => {
  it('the card names the agent and its relay; the stock factory picks the agentmsg transport', async () => {
    expect(card.supportedInterfaces[0]).toEqual(
      agentmsgInterface(card.supportedInterfaces[0]!.url.slice(9).split('?')[0]!, [relay.url]),
    )
    const client = await clientFor(alice)
    expect(client.transport.protocolName).toBe('AGENTMSG')
  })

  it('message/send: a blocking call returns the completed task with its artifact, and who called', async () => {
    const client = await clientFor(alice)
    const result = await client.sendMessage(userMessage('hello', 'm-send-1'))
    expect('status' in result).toBe(true)
    const task = result as Extract<typeof result, { status: unknown }>
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
    const text = task.artifacts[0]?.parts[0]?.content
    expect(text).toEqual({
      $case: 'text',
      value: `echo: hello (from ${alice.id} at level 3, known true)`,
    })
    expect(await executed()).toBe(1)
  })

  it('message/stream: the task, its status updates and the artifact, in order', async () => {
    const client = await clientFor(alice)
    const events: StreamResponse[] = []
    for await (const event of client.sendMessageStream(userMessage('streamed', 'm-stream-1')))
      events.push(event)
    expect(events.map((e) => e.payload?.$case)).toEqual([
      'task',
      'statusUpdate',
      'artifactUpdate',
      'statusUpdate',
    ])
    const last = events.at(-1)?.payload
    expect(last?.$case === 'statusUpdate' && last.value.status?.state).toBe(
      TaskState.TASK_STATE_COMPLETED,
    )
    expect(textOf(events)).toEqual([`echo: streamed (from ${alice.id} at level 3, known true)`])
    expect(await executed()).toBe(2)
  })

  it('a task cancelled mid-stream ends its stream with the canceled status; getTask agrees', async () => {
    const client = await clientFor(alice)
    const events: StreamResponse[] = []
    for await (const event of client.sendMessageStream(userMessage('slow one', 'm-slow-1'))) {
      events.push(event)
      const p = event.payload
      if (p?.$case === 'statusUpdate' && p.value.status?.state === TaskState.TASK_STATE_WORKING) {
        await client.cancelTask({ tenant: '', id: p.value.taskId, metadata: undefined })
      }
    }
    const last = events.at(-1)?.payload
    expect(last?.$case === 'statusUpdate' && last.value.status?.state).toBe(
      TaskState.TASK_STATE_CANCELED,
    )
    const taskId = last?.$case === 'statusUpdate' ? last.value.taskId : ''
    const task = await client.getTask({ tenant: '', id: taskId, historyLength: undefined })
    expect(task.status?.state).toBe(TaskState.TASK_STATE_CANCELED)
    expect(await executed()).toBe(3)
  })

  it('push notifications come back over agentmsg to the caller that registered them', async () => {
    const client = await clientFor(alice)
    const pushes: StreamResponse[] = []
    const done = new Promise<void>((resolve) =>
      onA2APush(alice, ({ event, token, message }) => {
        expect(token).toBe('secret-token')
        expect(message.from).toBe(card.supportedInterfaces[0]!.url.slice(9).split('?')[0])
        pushes.push(event)
        const p = event.payload
        if (p?.$case === 'statusUpdate' && p.value.status?.state === TaskState.TASK_STATE_COMPLETED)
          resolve()
      }),
    )
    const url = agentmsgInterface(alice.id, [relay.url]).url
    const request = withPushTo(userMessage('pushed', 'm-push-1'), url, 'secret-token')
    await client.sendMessage(request)
    await done
    expect(pushes.length).toBeGreaterThan(0)
    expect(await executed()).toBe(4)
  })

  it('a push URL naming another agent is refused: a caller cannot make the agent message others', async () => {
    const client = await clientFor(alice)
    const bob = await agent()
    const to = agentmsgInterface(bob.id, [relay.url]).url
    const request = withPushTo(userMessage('pushed', 'm-push-2'), to, '')
    const error = await client.sendMessage(request).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(A2AError)
    expect((error as Error).message).toMatch(/^forbidden: push notifications go only to the caller/)
  })

  it('an unknown sender is refused with an A2A error saying so', async () => {
    const stranger = await agent()
    const error = await (await clientFor(stranger))
      .sendMessage(userMessage('hi', 'm-x'))
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(A2AError)
    expect((error as Error).message).toBe(
      `unknown_sender: ${stranger.id} is not a known contact of this agent (level 3)`,
    )
  })

  it('a request tampered with in transit is refused: invalid_signature', async () => {
    const plain = createNodeFetch({ ca: cert.ca, ...network, timeoutMs: 10_000 })
    // A middlebox that rewrites the text of every message published to the relay.
    const tampering: typeof fetch = async (input, init) => {
      if (String(input).endsWith('/relay/publish') && typeof init?.body === 'string') {
        const message = JSON.parse(init.body)
        message.body.parts[0].ciphertext = message.body.parts[0].ciphertext.replace(
          /^./,
          (c: string) => (c === 'A' ? 'B' : 'A'),
        )
        return plain(input, { ...init, body: JSON.stringify(message) })
      }
      return plain(input, init)
    }
    const mallory = await agent({ fetch: tampering })
    const error = await (await clientFor(mallory))
      .sendMessage(userMessage('hi', 'm-t'))
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(A2AError)
    expect((error as Error).message).toMatch(/^invalid_signature: /)
  })

  it('a replayed request is not executed again; the same A2A call re-sent in its conversation is refused', async () => {
    const client = await clientFor(alice)
    await client.sendMessage(userMessage('once', 'm-r-1'))
    expect(await executed()).toBe(5)
    // Someone who saw alice's signed request (a relay operator) publishes it again.
    const request = captured.at(-1) as string
    const plain = createNodeFetch({ ca: cert.ca, ...network, timeoutMs: 10_000 })
    const again = await plain(`${relay.url}/relay/publish`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: request,
    })
    expect(again.status).toBe(202) // a duplicate: accepted, not stored or delivered again
    // The next task the executor runs is the next call's, not the replay's.
    await client.sendMessage(userMessage('twice', 'm-r-2'))
    expect(await executed()).toBe(6)
    // alice's agent re-sending the same A2A request in that call's conversation: refused.
    const conversationId = (JSON.parse(request) as { conversation_id: string }).conversation_id
    const answer = new Promise<Record<string, unknown>>((resolve) =>
      alice.on('message', (m) => {
        const part = m.message.body.parts[0]
        if (m.conversationId === conversationId && part?.type === 'data')
          resolve(part.data as never)
      }),
    )
    const rpc = {
      jsonrpc: '2.0',
      id: conversationId,
      method: 'SendMessage',
      params: SendMessageRequest.toJSON(userMessage('once', 'm-r-1')),
    }
    await alice.send(
      card.supportedInterfaces[0]!.url.slice(9).split('?')[0]!,
      {
        parts: [{ type: 'data', data: rpc as never }],
        contentType: 'application/a2a+json',
      },
      { conversationId, phase: 'request', relays: [relay.url] },
    )
    expect(await answer).toEqual({
      jsonrpc: '2.0',
      id: conversationId,
      error: {
        code: AGENTMSG_REFUSED,
        message: `invalid_format: conversation ${conversationId} already carried its request`,
        data: { agentmsg_code: 'invalid_format' },
      },
    })
  })
})
