/**
 * A2A push notifications over agentmsg. A client that cannot take webhooks (a browser tab, a
 * laptop behind NAT) registers `agentmsg:<its id>?relay=…` as the config's URL; the server's
 * {@link agentmsgPushSender} sends each task event there as a signed (and, through untrusted
 * relays, sealed) message, and {@link onA2APush} hands them to the client's application.
 */
import { StreamResponse } from '@a2a-js/sdk'
import type {
  PushNotificationSender,
  PushNotificationStore,
  ServerCallContext,
} from '@a2a-js/sdk/server'
import type { Agent, ReceivedMessage } from '@agentmsg/client'
import { a2aContent, a2aPayload, isObject, parseAgentmsgUrl } from './wire.js'

/** The JSON-RPC method of a push notification message. */
const PUSH_METHOD = 'agentmsg/push'

/** A push notification as the client receives it. */
export interface A2APush {
  /** The task event (the same object `message/stream` yields). */
  event: StreamResponse
  /** The config's `token`, to check against the one registered. */
  token: string
  /** The config's id. */
  configId: string
  /** The verified message that carried it. */
  message: ReceivedMessage
}

/**
 * A `PushNotificationSender` for the stock `DefaultRequestHandler`: events of a task go to every
 * `agentmsg:` URL registered for it in `store` (the adapter lets a caller register only its own),
 * in order per task. Other URLs are not dialled.
 */
export function agentmsgPushSender(
  agent: Agent,
  store: PushNotificationStore,
  onError: (error: unknown) => void = () => {},
): PushNotificationSender {
  const chains = new Map<string, Promise<void>>()
  return {
    async send(event: StreamResponse, context: ServerCallContext) {
      const payload = event.payload
      const taskId = payload?.$case === 'task' ? payload.value.id : (payload?.value.taskId ?? '')
      if (!taskId) return
      const configs = (await store.load(taskId, context)).filter((c) =>
        c.url.startsWith('agentmsg:'),
      )
      if (configs.length === 0) return
      const previous = chains.get(taskId) ?? Promise.resolve()
      const next = previous.then(async () => {
        for (const config of configs) {
          const { agent: to, relays } = parseAgentmsgUrl(config.url)
          const params = {
            token: config.token,
            config_id: config.id,
            event: StreamResponse.toJSON(event),
          }
          await agent
            .send(to, a2aContent({ jsonrpc: '2.0', method: PUSH_METHOD, params }), {
              phase: 'update',
              relays,
            })
            .catch(onError)
        }
      })
      chains.set(taskId, next)
      await next
      if (chains.get(taskId) === next) chains.delete(taskId)
    },
  }
}

/** Call `listener` with each push notification `agent` receives; returns the unsubscribe. */
export function onA2APush(
  agent: Agent,
  listener: (push: A2APush) => void | Promise<void>,
): () => void {
  return agent.on('message', (m) => {
    const payload = a2aPayload(m)
    if (payload?.phase !== 'update' || payload.rpc.method !== PUSH_METHOD) return
    const params = payload.rpc.params
    if (!isObject(params) || !isObject(params.event)) return
    return listener({
      event: StreamResponse.fromJSON(params.event as never),
      token: typeof params.token === 'string' ? params.token : '',
      configId: typeof params.config_id === 'string' ? params.config_id : '',
      message: m,
    })
  })
}
