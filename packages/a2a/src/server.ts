/**
 * The A2A side of an agentmsg agent: a stock `@a2a-js/sdk` request handler (its
 * `DefaultRequestHandler` with an `AgentExecutor`) answering calls that arrive as messages, in
 * Node or in a browser tab that only has relays. The caller is the verified sender: its agent id,
 * auth level (PROFILE §5) and whether it is a known contact reach the executor through the
 * call context, and `allow` decides who may call at all.
 */
import { A2A_PROTOCOL_VERSION } from '@a2a-js/sdk'
import { toJsonRpcError } from '@a2a-js/sdk/errors'
import {
  type A2ARequestHandler,
  JsonRpcTransportHandler,
  ServerCallContext,
  type User,
} from '@a2a-js/sdk/server'
import type { Agent, ReceivedMessage } from '@agentmsg/client'
import { type AuthLevel, PROFILE } from '@agentmsg/core'
import { refusalObject } from './errors.js'
import {
  type A2APayload,
  type AgentmsgAddress,
  a2aContent,
  a2aPayload,
  type CallPhase,
  closeContent,
  isObject,
  parseAgentmsgUrl,
} from './wire.js'

/** Who made a call, as agentmsg verified it. */
export interface A2ACaller {
  /** The sender's agent id. */
  agent: string
  /** The level its signature verified at (PROFILE §5). */
  level: AuthLevel
  /** Pinned, introduced or accepted before (PROFILE §5). */
  knownContact: boolean
  /** Whether the request came sealed (PROFILE §8). */
  sealed: boolean
  /** The request's `message_id`. */
  messageId: string
  /** The call's conversation. */
  conversationId: string
}

/** The A2A `User` of a call: authenticated by its agentmsg signature. */
export class AgentmsgUser implements User {
  constructor(readonly caller: A2ACaller) {}
  get isAuthenticated(): boolean {
    return true
  }
  get userName(): string {
    return this.caller.agent
  }
}

/** The caller of the call `context` belongs to (an executor reads `requestContext.context`). */
export function callerOf(context: ServerCallContext): A2ACaller | undefined {
  const user = context.user
  return user instanceof AgentmsgUser ? user.caller : undefined
}

/** Options of {@link serveA2A}. */
export interface ServeA2AOptions {
  /** Who may call. @default known contacts only (pinned, introduced or accepted before) */
  allow?: (caller: A2ACaller) => boolean | Promise<boolean>
  /** Calls answered at once; more are refused with `rate_limited`. @default 64 */
  maxConcurrentCalls?: number
  /** Failures no caller can be told about (an answer that could not be sent). */
  onError?: (error: unknown) => void
}

/** A running adapter. */
export interface A2AServer {
  /** Stop taking calls and wait for the ones in flight to end. */
  close(): Promise<void>
}

/** Answer A2A calls that reach `agent` with `handler`. */
export function serveA2A(
  agent: Agent,
  handler: A2ARequestHandler,
  options: ServeA2AOptions = {},
): A2AServer {
  const jsonRpc = new JsonRpcTransportHandler(handler)
  const allow = options.allow ?? ((caller) => caller.knownContact)
  const max = options.maxConcurrentCalls ?? 64
  const report = options.onError ?? (() => {})
  /** Calls in flight, by caller and conversation: a `close` from the caller ends its stream. */
  const active = new Map<string, AbortController>()
  const running = new Set<Promise<void>>()
  const refusals = new RefusalBound()

  async function call(m: ReceivedMessage, payload: A2APayload, hangUp: AbortSignal) {
    let index = 0
    // Numbered, so the caller puts them back in order whichever relays carried them.
    const answer = (rpc: unknown, phase: CallPhase) => {
      const content =
        phase === 'close' ? closeContent(m.conversationId, index) : a2aContent(rpc, { index })
      index += 1
      return agent.reply(m, content, { phase })
    }
    const { rpc } = payload
    const id = typeof rpc.id === 'string' || typeof rpc.id === 'number' ? rpc.id : null
    const refuse = (code: string, message: string) =>
      answer({ jsonrpc: '2.0', id, error: refusalObject(code, message) }, 'response')
    const caller: A2ACaller = {
      agent: m.from,
      level: m.level,
      knownContact: m.knownContact,
      sealed: m.sealed === true,
      messageId: m.message.message_id,
      conversationId: m.conversationId,
    }
    if (!(await allow(caller))) {
      if (!refusals.mayAnswer(m.from)) return
      const why = m.knownContact
        ? `${m.from} may not call this agent`
        : `${m.from} is not a known contact of this agent (level ${m.level})`
      return refuse(m.knownContact ? 'forbidden' : 'unknown_sender', why)
    }
    // A call is one conversation: its request is the caller's first message in it (sequence 0).
    if (m.message.sequence !== 0) {
      return refuse(
        'invalid_format',
        `conversation ${m.conversationId} already carried its request`,
      )
    }
    const pushTo = pushUrls(rpc).find((url) => !isTheCaller(url, m.from))
    if (pushTo !== undefined) {
      return refuse(
        'forbidden',
        `push notifications go only to the caller over agentmsg: ${pushTo}`,
      )
    }
    const params = payload.serviceParameters
    const context = new ServerCallContext({
      user: new AgentmsgUser(caller),
      requestedVersion: params['A2A-Version'] ?? A2A_PROTOCOL_VERSION,
      requestedExtensions: params['A2A-Extensions']?.split(',').map((e) => e.trim()),
    })
    const out = await jsonRpc.handle(rpc, context)
    if (!(Symbol.asyncIterator in out)) return answer(out, 'response')
    const events = out[Symbol.asyncIterator]()
    const stopped = new Promise<'stopped'>((resolve) =>
      hangUp.addEventListener('abort', () => resolve('stopped'), { once: true }),
    )
    try {
      for (;;) {
        const next = await Promise.race([events.next(), stopped])
        if (next === 'stopped' || next.done) break
        // One at a time: each event is accepted (or in the outbox) before the next is numbered.
        await answer(next.value, 'update')
      }
    } catch (error) {
      return answer({ jsonrpc: '2.0', id, error: toJsonRpcError(error) }, 'response')
    } finally {
      void events.return?.(undefined)
    }
    if (!hangUp.aborted) await answer(undefined, 'close')
  }

  const stop = agent.on('message', (m) => {
    const payload = a2aPayload(m)
    if (!payload) return
    const key = `${m.from} ${m.conversationId}`
    if (payload.phase === 'close') {
      active.get(key)?.abort()
      return
    }
    if (payload.phase !== 'request' || active.has(key)) return
    const hangUp = new AbortController()
    const run = (async () => {
      if (active.size >= max) {
        const error = refusalObject('rate_limited', `more than ${max} calls in flight`)
        const rpc = { jsonrpc: '2.0', id: payload.rpc.id ?? null, error }
        await agent.reply(m, a2aContent(rpc, { index: 0 }), { phase: 'response' })
        return
      }
      active.set(key, hangUp)
      try {
        await call(m, payload, hangUp.signal)
      } finally {
        active.delete(key)
      }
    })().catch(report)
    running.add(run)
    void run.finally(() => running.delete(run))
  })

  return {
    async close() {
      stop()
      for (const c of active.values()) c.abort()
      await Promise.allSettled([...running])
    },
  }
}

/** Push notification URLs a request asks for (a config, or one inside a send's configuration). */
function pushUrls(rpc: Record<string, unknown>): string[] {
  const params = isObject(rpc.params) ? rpc.params : {}
  const configs =
    rpc.method === 'CreateTaskPushNotificationConfig'
      ? [params]
      : isObject(params.configuration)
        ? [params.configuration.taskPushNotificationConfig]
        : []
  return configs.flatMap((c) => (isObject(c) && typeof c.url === 'string' ? [c.url] : []))
}

/** Pushes go to the verified caller only: a request cannot make this agent message others. */
function isTheCaller(url: string, caller: string): boolean {
  let address: AgentmsgAddress
  try {
    address = parseAgentmsgUrl(url)
  } catch {
    return false
  }
  return address.agent === caller
}

/** Senders remembered for the bound below: beyond, the oldest are forgotten. */
const MAX_REFUSED_SENDERS = 4096

/**
 * Refusals to callers `allow` turns away: at most one a minute per sender, as PROFILE §7 bounds
 * error replies, so minting did:keys cannot turn this agent into a reflector of messages to
 * relays a stranger names.
 */
class RefusalBound {
  readonly #last = new Map<string, number>()

  mayAnswer(sender: string, now = Date.now()): boolean {
    const last = this.#last.get(sender)
    if (last !== undefined && now - last < PROFILE.errorReplyIntervalMs) return false
    this.#last.delete(sender)
    if (this.#last.size >= MAX_REFUSED_SENDERS) {
      this.#last.delete(this.#last.keys().next().value as string)
    }
    this.#last.set(sender, now)
    return true
  }
}
