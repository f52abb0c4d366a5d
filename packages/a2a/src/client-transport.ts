/**
 * The `@a2a-js/sdk` client transport over agentmsg: a stock `ClientFactory` given
 * `agentmsgTransportFactory(agent)` reaches any agent whose card lists an `AGENTMSG` interface.
 * Every call is one signed agentmsg message to the agent (sealed through untrusted relays, kept
 * in the outbox like any send); its answers come back as messages in the same conversation.
 */
import {
  A2A_PROTOCOL_VERSION,
  AgentCard,
  CancelTaskRequest,
  DeleteTaskPushNotificationConfigRequest,
  GetExtendedAgentCardRequest,
  GetTaskPushNotificationConfigRequest,
  GetTaskRequest,
  ListTaskPushNotificationConfigsRequest,
  ListTaskPushNotificationConfigsResponse,
  ListTasksRequest,
  ListTasksResponse,
  SendMessageRequest,
  SendMessageResponse,
  type SendMessageResult,
  StreamResponse,
  SubscribeToTaskRequest,
  Task,
  TaskPushNotificationConfig,
} from '@a2a-js/sdk'
import type { RequestOptions, Transport, TransportFactory } from '@a2a-js/sdk/client'
import type { Agent } from '@agentmsg/client'
import { createMessageId } from '@agentmsg/core'
import { CallReplies, callsOf } from './calls.js'
import { a2aError, answerOf, refusal } from './errors.js'
import {
  AGENTMSG_BINDING,
  type AgentmsgAddress,
  a2aContent,
  closeContent,
  parseAgentmsgUrl,
} from './wire.js'

/** Options of {@link agentmsgTransportFactory}. */
export interface AgentmsgTransportOptions {
  /** How long to wait for the next answer of a call (a stream's next event). @default 600000 */
  idleTimeoutMs?: number
  /** Seal requests on every route (`SendOptions.seal`). @default sealed unless confidential */
  seal?: boolean
}

/** A call's stream of task events. */
type Events = AsyncGenerator<StreamResponse, void, undefined>

/** Request and answer converters of a JSON-RPC method (the A2A SDK's own). */
interface Codec<P, R> {
  toJSON(params: P): unknown
  fromJSON(json: never): R
}

/** The `TransportFactory` for `AGENTMSG` interfaces: calls go out as `agent`'s messages. */
export function agentmsgTransportFactory(
  agent: Agent,
  options: AgentmsgTransportOptions = {},
): TransportFactory {
  return {
    get protocolName() {
      return AGENTMSG_BINDING
    },
    create: async (url) => new AgentmsgTransport(agent, parseAgentmsgUrl(url), options),
  }
}

/** One A2A agent, reached over agentmsg. */
export class AgentmsgTransport implements Transport {
  readonly #calls: Map<string, CallReplies>
  readonly #idleMs: number

  constructor(
    readonly agent: Agent,
    readonly peer: AgentmsgAddress,
    readonly options: AgentmsgTransportOptions = {},
  ) {
    this.#calls = callsOf(agent)
    this.#idleMs = options.idleTimeoutMs ?? 600_000
  }

  get protocolName(): string {
    return AGENTMSG_BINDING
  }

  get protocolVersion(): string {
    return A2A_PROTOCOL_VERSION
  }

  getExtendedAgentCard(
    params: GetExtendedAgentCardRequest,
    options?: RequestOptions,
  ): Promise<AgentCard> {
    return this.#unary(
      'GetExtendedAgentCard',
      GetExtendedAgentCardRequest,
      AgentCard,
      params,
      options,
    )
  }

  async sendMessage(
    params: SendMessageRequest,
    options?: RequestOptions,
  ): Promise<SendMessageResult> {
    const answer = await this.#unary(
      'SendMessage',
      SendMessageRequest,
      SendMessageResponse,
      params,
      options,
    )
    if (!answer.payload) throw refusal('invalid_format', 'an answer without a message or task')
    return answer.payload.value
  }

  sendMessageStream(params: SendMessageRequest, options?: RequestOptions): Events {
    return this.#stream('SendStreamingMessage', SendMessageRequest, params, options)
  }

  resubscribeTask(params: SubscribeToTaskRequest, options?: RequestOptions): Events {
    return this.#stream('SubscribeToTask', SubscribeToTaskRequest, params, options)
  }

  getTask(params: GetTaskRequest, options?: RequestOptions): Promise<Task> {
    return this.#unary('GetTask', GetTaskRequest, Task, params, options)
  }

  cancelTask(params: CancelTaskRequest, options?: RequestOptions): Promise<Task> {
    return this.#unary('CancelTask', CancelTaskRequest, Task, params, options)
  }

  listTasks(params: ListTasksRequest, options?: RequestOptions): Promise<ListTasksResponse> {
    return this.#unary('ListTasks', ListTasksRequest, ListTasksResponse, params, options)
  }

  createTaskPushNotificationConfig(
    params: TaskPushNotificationConfig,
    options?: RequestOptions,
  ): Promise<TaskPushNotificationConfig> {
    const method = 'CreateTaskPushNotificationConfig'
    return this.#unary(
      method,
      TaskPushNotificationConfig,
      TaskPushNotificationConfig,
      params,
      options,
    )
  }

  getTaskPushNotificationConfig(
    params: GetTaskPushNotificationConfigRequest,
    options?: RequestOptions,
  ): Promise<TaskPushNotificationConfig> {
    const codec = GetTaskPushNotificationConfigRequest
    return this.#unary(
      'GetTaskPushNotificationConfig',
      codec,
      TaskPushNotificationConfig,
      params,
      options,
    )
  }

  listTaskPushNotificationConfig(
    params: ListTaskPushNotificationConfigsRequest,
    options?: RequestOptions,
  ): Promise<ListTaskPushNotificationConfigsResponse> {
    const [codec, answer] = [
      ListTaskPushNotificationConfigsRequest,
      ListTaskPushNotificationConfigsResponse,
    ]
    return this.#unary('ListTaskPushNotificationConfigs', codec, answer, params, options)
  }

  async deleteTaskPushNotificationConfig(
    params: DeleteTaskPushNotificationConfigRequest,
    options?: RequestOptions,
  ): Promise<void> {
    const codec = DeleteTaskPushNotificationConfigRequest
    await this.#unary('DeleteTaskPushNotificationConfig', codec, undefined, params, options)
  }

  /** A call with one answer: the `response` of its conversation. */
  async #unary<P, R>(
    method: string,
    request: Codec<P, unknown>,
    answer: Codec<never, R> | undefined,
    params: P,
    options: RequestOptions | undefined,
  ): Promise<R> {
    const { id, replies } = await this.#open(method, request.toJSON(params), options)
    try {
      const reply = await replies.next(this.#idleMs, options?.signal)
      const result = answerOf(reply, id)
      return (answer ? answer.fromJSON(result as never) : undefined) as R
    } catch (error) {
      throw a2aError(error)
    } finally {
      this.#calls.delete(id)
    }
  }

  /** A call answered by a stream of events: `update`s, ended by `close` (or an error). */
  async *#stream<P>(
    method: string,
    request: Codec<P, unknown>,
    params: P,
    options: RequestOptions | undefined,
  ): Events {
    const { id, replies } = await this.#open(method, request.toJSON(params), options)
    let ended = false
    try {
      for (;;) {
        const reply = await replies.next(this.#idleMs, options?.signal).catch((e) => {
          throw a2aError(e)
        })
        if (reply.phase === 'close') {
          ended = true
          return
        }
        // An error answer ends the call; so does a `response` (an agent that does not stream).
        ended = reply.phase === 'response'
        yield StreamResponse.fromJSON(answerOf(reply, id) as never)
        if (ended) return
      }
    } finally {
      this.#calls.delete(id)
      // The caller stopped listening early: tell the agent, which stops sending (the task runs
      // on, as when an HTTP client closes its SSE stream).
      if (!ended) this.#hangUp(id)
    }
  }

  /** Send the request; its conversation id is the JSON-RPC id, registered before it goes. */
  async #open(method: string, params: unknown, options: RequestOptions | undefined) {
    const id = createMessageId(Date.now())
    const replies = new CallReplies(this.peer.agent)
    this.#calls.set(id, replies)
    try {
      const rpc = { jsonrpc: '2.0', id, method, params }
      await this.agent.send(
        this.peer.agent,
        a2aContent(rpc, { serviceParameters: options?.serviceParameters }),
        {
          conversationId: id,
          phase: 'request',
          relays: this.peer.relays,
          seal: this.options.seal,
          signal: options?.signal,
        },
      )
    } catch (error) {
      this.#calls.delete(id)
      throw a2aError(error)
    }
    return { id, replies }
  }

  #hangUp(id: string): void {
    this.agent
      .send(this.peer.agent, closeContent(id), {
        conversationId: id,
        phase: 'close',
        relays: this.peer.relays,
      })
      .catch(() => {
        // Best effort: the agent's events report it; the agent stops at its own idle limit.
      })
  }
}
