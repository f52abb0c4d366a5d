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

/** A unary method of the transport: `request` encodes its params, `answer` decodes the result. */
function unary<P, R>(method: string, request: Codec<P, unknown>, answer?: Codec<never, R>) {
  return function (this: AgentmsgTransport, params: P, options?: RequestOptions): Promise<R> {
    return this.call(method, request.toJSON(params), answer, options)
  }
}

/** A streaming method: its answers are task events. */
function streaming<P>(method: string, request: Codec<P, unknown>) {
  return function (this: AgentmsgTransport, params: P, options?: RequestOptions): Events {
    return this.stream(method, request.toJSON(params), options)
  }
}

/** One A2A agent, reached over agentmsg: each method is the JSON-RPC binding's, as a call. */
class AgentmsgTransport implements Transport {
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

  async sendMessage(
    params: SendMessageRequest,
    options?: RequestOptions,
  ): Promise<SendMessageResult> {
    const json = SendMessageRequest.toJSON(params)
    const answer = await this.call('SendMessage', json, SendMessageResponse, options)
    if (!answer.payload) throw refusal('invalid_format', 'an answer without a message or task')
    return answer.payload.value
  }

  readonly sendMessageStream: Transport['sendMessageStream'] = streaming(
    'SendStreamingMessage',
    SendMessageRequest,
  )
  readonly resubscribeTask: Transport['resubscribeTask'] = streaming(
    'SubscribeToTask',
    SubscribeToTaskRequest,
  )
  readonly getExtendedAgentCard: Transport['getExtendedAgentCard'] = unary(
    'GetExtendedAgentCard',
    GetExtendedAgentCardRequest,
    AgentCard,
  )
  readonly getTask: Transport['getTask'] = unary('GetTask', GetTaskRequest, Task)
  readonly cancelTask: Transport['cancelTask'] = unary('CancelTask', CancelTaskRequest, Task)
  readonly listTasks: Transport['listTasks'] = unary(
    'ListTasks',
    ListTasksRequest,
    ListTasksResponse,
  )
  readonly createTaskPushNotificationConfig: Transport['createTaskPushNotificationConfig'] = unary(
    'CreateTaskPushNotificationConfig',
    TaskPushNotificationConfig,
    TaskPushNotificationConfig,
  )
  readonly getTaskPushNotificationConfig: Transport['getTaskPushNotificationConfig'] = unary(
    'GetTaskPushNotificationConfig',
    GetTaskPushNotificationConfigRequest,
    TaskPushNotificationConfig,
  )
  readonly listTaskPushNotificationConfig: Transport['listTaskPushNotificationConfig'] = unary(
    'ListTaskPushNotificationConfigs',
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
  )
  readonly deleteTaskPushNotificationConfig: Transport['deleteTaskPushNotificationConfig'] = unary(
    'DeleteTaskPushNotificationConfig',
    DeleteTaskPushNotificationConfigRequest,
  )

  /** A call with one answer: the `response` of its conversation. */
  async call<R>(
    method: string,
    params: unknown,
    answer: Codec<never, R> | undefined,
    options: RequestOptions | undefined,
  ): Promise<R> {
    const { id, replies } = await this.#open(method, params, options)
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
  async *stream(method: string, params: unknown, options: RequestOptions | undefined): Events {
    const { id, replies } = await this.#open(method, params, options)
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
        // Best effort: unheard, the agent sends on until the task's stream ends by itself.
      })
  }
}
