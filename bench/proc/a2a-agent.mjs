/**
 * The A2A agent of the `a2a` bench in its own process (see harness.mjs): one stock
 * `DefaultRequestHandler` (in-memory task store) around {@link CompletingExecutor}, served
 * either way by `config.kind`:
 * - `http`: a2a-js's own Express `jsonRpcHandler` on node:https (dev certificate): JSON-RPC over
 *   HTTPS, the stock binding.
 * - `agentmsg`: `serveA2A` from a relay-only agentmsg agent (files in a scratch directory, its
 *   one relay `config.relay`), the callers in `config.contacts` pinned as known contacts.
 * `init` answers `{card}` (the agent card as JSON) once serving.
 */
import { createServer } from 'node:https'
import { join } from 'node:path'
import { A2A_PROTOCOL_VERSION, AgentCard, TaskState } from '@a2a-js/sdk'
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server'
import { jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express'
import { agentmsgInterface, serveA2A } from '@agentmsg/a2a'
import { createAddressPolicy, createNodeAgent } from '@agentmsg/client/node'
import { publicKeyFromDidKey } from '@agentmsg/core'
import { fsStorage } from '@agentmsg/storage-fs'
import express from 'express'
import { scratch, serveCommands } from './harness.mjs'

/** Answers every message with its task, completed at once, the text echoed as an artifact. */
class CompletingExecutor {
  async execute(request, bus) {
    const { taskId, contextId, userMessage } = request
    const text = userMessage.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : ''))
    bus.publish(
      AgentEvent.task({
        id: taskId,
        contextId,
        status: {
          state: TaskState.TASK_STATE_COMPLETED,
          message: undefined,
          timestamp: new Date().toISOString(),
        },
        artifacts: [
          {
            artifactId: 'echo',
            name: 'echo',
            description: '',
            parts: [
              {
                content: { $case: 'text', value: `echo: ${text.join('')}` },
                metadata: undefined,
                filename: '',
                mediaType: 'text/plain',
              },
            ],
            metadata: undefined,
            extensions: [],
          },
        ],
        history: [userMessage],
        metadata: undefined,
      }),
    )
    bus.finished()
  }

  async cancelTask() {}
}

/** The card of the agent, reached at `agentInterface`. */
const cardFor = (agentInterface) => ({
  name: 'Bench echo',
  description: 'Completes every task at once',
  supportedInterfaces: [agentInterface],
  provider: undefined,
  version: '1.0.0',
  documentationUrl: undefined,
  capabilities: {
    streaming: false,
    pushNotifications: false,
    extensions: [],
    extendedAgentCard: false,
  },
  securitySchemes: {},
  securityRequirements: [],
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [],
  signatures: [],
  iconUrl: undefined,
})

const handlerFor = (card) =>
  new DefaultRequestHandler(card, new InMemoryTaskStore(), new CompletingExecutor())

async function serveHttp({ tls }) {
  const app = express()
  const card = cardFor(undefined)
  app.use(
    jsonRpcHandler({
      requestHandler: handlerFor(card),
      userBuilder: UserBuilder.noAuthentication,
    }),
  )
  const server = createServer({ cert: tls.cert, key: tls.key, minVersion: 'TLSv1.2' }, app)
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  card.supportedInterfaces = [
    {
      url: `https://127.0.0.1:${server.address().port}/`,
      protocolBinding: 'JSONRPC',
      protocolVersion: A2A_PROTOCOL_VERSION,
      tenant: '',
    },
  ]
  return {
    card,
    close: async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

async function serveAgentmsg({ relay, ca, contacts, storage }) {
  const dir = scratch('a2a-agent-')
  const agent = await createNodeAgent({
    ...(storage === 'fs' ? { storage: await fsStorage({ dir: join(dir.dir, 'agent') }) } : {}),
    relays: [relay],
    ca,
    addressPolicy: createAddressPolicy({ allow: ['127.0.0.1'] }),
  })
  for (const id of contacts) await agent.contacts.pin(id, publicKeyFromDidKey(id))
  const card = cardFor(agentmsgInterface(agent.id, [relay]))
  const server = serveA2A(agent, handlerFor(card), {
    onError: (e) => process.stderr.write(`a2a-agent: ${e}\n`),
  })
  return {
    card,
    close: async () => {
      await server.close()
      await agent.close()
      dir.cleanup()
    },
  }
}

let running
serveCommands({
  async init({ config }) {
    running = config.kind === 'http' ? await serveHttp(config) : await serveAgentmsg(config)
    return { card: AgentCard.toJSON(running.card) }
  },
  close: () => running?.close(),
})
