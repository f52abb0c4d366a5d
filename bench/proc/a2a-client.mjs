/**
 * The A2A caller of the `a2a` bench in its own process (see harness.mjs): a stock a2a-js
 * `ClientFactory`, with `config.kind`
 * - `http`: its default JSON-RPC transport, given a fetch that trusts the dev CA;
 * - `agentmsg`: `agentmsgTransportFactory` of a relay-only agentmsg agent (files in a scratch
 *   directory, its one relay `config.relay`).
 * Commands: `init` → `{id}` (the agent's id, for the server to pin); `connect {card}`;
 * `rate {concurrency, ms, warmupMs}` → `{rps, n}`: `sendMessage` calls, `concurrency` in flight;
 * `latency {ms, warmup, max}` → `{p50, p99, n}` in ms: one call at a time.
 */
import { join } from 'node:path'
import { AgentCard, Role } from '@a2a-js/sdk'
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory } from '@a2a-js/sdk/client'
import { agentmsgTransportFactory } from '@agentmsg/a2a'
import { createAddressPolicy, createNodeAgent } from '@agentmsg/client/node'
import { fsStorage } from '@agentmsg/storage-fs'
import { createNodeFetch } from '@agentmsg/transport-https/node'
import { percentile, scratch, serveCommands } from './harness.mjs'

const addressPolicy = createAddressPolicy({ allow: ['127.0.0.1'] })
let config
let agent
let dir
let client
let sent = 0

/** A fresh user message per call, as a caller sends them. */
const request = () => ({
  tenant: '',
  configuration: undefined,
  metadata: undefined,
  message: {
    messageId: `bench-${process.pid}-${++sent}`,
    contextId: '',
    taskId: '',
    role: Role.ROLE_USER,
    parts: [
      {
        content: { $case: 'text', value: 'hello' },
        metadata: undefined,
        filename: '',
        mediaType: 'text/plain',
      },
    ],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  },
})

/** One call; throws unless it came back as a task. */
async function call() {
  const result = await client.sendMessage(request())
  if (!('status' in result)) throw new Error(`not a task: ${JSON.stringify(result)}`)
}

/** `concurrency` calls in flight for `ms`; completed calls per second. */
async function rate({ concurrency, ms, warmupMs = 0 }) {
  const run = async (duration) => {
    let n = 0
    const end = performance.now() + duration
    const worker = async () => {
      while (performance.now() < end) {
        await call()
        n++
      }
    }
    const start = performance.now()
    await Promise.all(Array.from({ length: concurrency }, worker))
    return { rps: (n * 1000) / (performance.now() - start), n }
  }
  if (warmupMs > 0) await run(warmupMs)
  return run(ms)
}

/** One call at a time for `ms` (at most `max` calls) after `warmup` calls: latency in ms. */
async function latency({ ms, warmup = 20, max = 5_000 }) {
  for (let i = 0; i < warmup; i++) await call()
  const lat = []
  const end = performance.now() + ms
  while (performance.now() < end && lat.length < max) {
    const t0 = performance.now()
    await call()
    lat.push(performance.now() - t0)
  }
  lat.sort((a, b) => a - b)
  return { p50: percentile(lat, 50), p99: percentile(lat, 99), n: lat.length }
}

serveCommands({
  async init(msg) {
    config = msg.config
    if (config.kind === 'http') return { id: undefined }
    dir = scratch('a2a-client-')
    agent = await createNodeAgent({
      ...(config.storage === 'fs'
        ? { storage: await fsStorage({ dir: join(dir.dir, 'agent') }) }
        : {}),
      relays: [config.relay],
      ca: config.ca,
      addressPolicy,
    })
    return { id: agent.id }
  },
  async connect({ card }) {
    const transport =
      config.kind === 'http'
        ? new JsonRpcTransportFactory({
            fetchImpl: createNodeFetch({ ca: config.ca, addressPolicy }),
          })
        : agentmsgTransportFactory(agent, { idleTimeoutMs: 30_000 })
    const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [transport],
    })
    client = await new ClientFactory(options).createFromAgentCard(AgentCard.fromJSON(card))
    return client.transport.protocolName
  },
  rate,
  latency,
  async close() {
    await agent?.close()
    dir?.cleanup()
  },
})
