/**
 * The A2A agent of the tests, the browser page and the bench: a stock `AgentExecutor` that
 * answers a task with a `working` status, one artifact echoing the text and who sent it (the
 * verified agentmsg caller), then `completed`. A text containing "slow" waits for `cancelTask`.
 */
import { type AgentCard, Role, type SendMessageRequest, TaskState } from '@a2a-js/sdk'
import {
  AgentEvent,
  type AgentExecutor,
  DefaultRequestHandler,
  type ExecutionEventBus,
  InMemoryPushNotificationStore,
  InMemoryTaskStore,
  type RequestContext,
} from '@a2a-js/sdk/server'
// The package by name, not `../src`: the browser page bundles this file against the built
// package (`dist/`), while Node tests and the executor process resolve it to the sources.
import { agentmsgInterface, agentmsgPushSender, callerOf } from '@agentmsg/a2a'
import type { Agent } from '@agentmsg/client'

const status = (state: TaskState) => ({
  state,
  message: undefined,
  timestamp: new Date().toISOString(),
})

export class EchoExecutor implements AgentExecutor {
  readonly #cancelled = new Map<string, () => void>()
  /** Tasks executed, for the tests that count them. */
  executed = 0

  async execute(request: RequestContext, bus: ExecutionEventBus): Promise<void> {
    this.executed += 1
    const { taskId, contextId } = request
    const text = request.userMessage.parts
      .map((p) => (p.content?.$case === 'text' ? p.content.value : ''))
      .join('')
    const caller = callerOf(request.context)
    const base = { taskId, contextId, metadata: undefined }
    bus.publish(
      AgentEvent.task({
        id: taskId,
        contextId,
        status: status(TaskState.TASK_STATE_SUBMITTED),
        artifacts: [],
        history: [request.userMessage],
        metadata: undefined,
      }),
    )
    bus.publish(AgentEvent.statusUpdate({ ...base, status: status(TaskState.TASK_STATE_WORKING) }))
    if (text.includes('slow')) {
      await new Promise<void>((resolve) => this.#cancelled.set(taskId, resolve))
      bus.publish(
        AgentEvent.statusUpdate({ ...base, status: status(TaskState.TASK_STATE_CANCELED) }),
      )
      bus.finished()
      return
    }
    const echo = `echo: ${text} (from ${caller?.agent} at level ${caller?.level}, known ${caller?.knownContact})`
    bus.publish(
      AgentEvent.artifactUpdate({
        ...base,
        artifact: {
          artifactId: 'echo',
          name: 'echo',
          description: '',
          parts: [
            {
              content: { $case: 'text', value: echo },
              metadata: undefined,
              filename: '',
              mediaType: 'text/plain',
            },
          ],
          metadata: undefined,
          extensions: [],
        },
        append: false,
        lastChunk: true,
      }),
    )
    bus.publish(
      AgentEvent.statusUpdate({ ...base, status: status(TaskState.TASK_STATE_COMPLETED) }),
    )
    bus.finished()
  }

  async cancelTask(taskId: string): Promise<void> {
    this.#cancelled.get(taskId)?.()
    this.#cancelled.delete(taskId)
  }
}

/** What {@link echoHandler} builds. */
export interface EchoAgent {
  card: AgentCard
  handler: DefaultRequestHandler
  executor: EchoExecutor
}

/** The card, the stock request handler (with pushes over agentmsg) and the executor. */
export function echoHandler(agent: Agent, relays: string[]): EchoAgent {
  const executor = new EchoExecutor()
  const pushes = new InMemoryPushNotificationStore()
  const card: AgentCard = {
    name: 'Echo',
    description: 'Echoes text back, over agentmsg',
    supportedInterfaces: [agentmsgInterface(agent.id, relays)],
    provider: undefined,
    version: '1.0.0',
    documentationUrl: undefined,
    capabilities: {
      streaming: true,
      pushNotifications: true,
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
  }
  const handler = new DefaultRequestHandler(
    card,
    new InMemoryTaskStore(),
    executor,
    undefined,
    pushes,
    agentmsgPushSender(agent, pushes),
  )
  return { card, handler, executor }
}

/** A user message of `text`. */
export const userMessage = (text: string, messageId: string): SendMessageRequest => ({
  tenant: '',
  configuration: undefined,
  metadata: undefined,
  message: {
    messageId,
    contextId: '',
    taskId: '',
    role: Role.ROLE_USER,
    parts: [
      {
        content: { $case: 'text' as const, value: text },
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
