/**
 * The caller's side of calls in flight: one `message` listener per agent routes each A2A
 * message to the call whose conversation it answers, and each call hands its answers over in
 * the order the callee numbered them in (`index`), whatever order relays delivered them in.
 */
import type { Agent, ReceivedMessage } from '@agentmsg/client'
import { AgentMsgError } from '@agentmsg/core'
import { type A2APayload, a2aPayload } from './wire.js'

/** Answers held ahead of a gap: beyond, the call fails (a flood, not a gap). */
const MAX_HELD_AHEAD = 256

/** One call's answers, in order. */
export class CallReplies {
  #next = 0
  readonly #held = new Map<number, A2APayload>()
  readonly #ready: A2APayload[] = []
  #failure: unknown
  #wake: (() => void) | undefined

  constructor(
    /** The callee: answers from anyone else in the conversation are not answers. */
    readonly peer: string,
  ) {}

  /** Take answer number `index`; one already taken is dropped. */
  add(index: number, payload: A2APayload): void {
    if (index < this.#next || this.#held.has(index)) return
    if (this.#held.size >= MAX_HELD_AHEAD) {
      this.fail(
        new AgentMsgError('rate_limited', `more than ${MAX_HELD_AHEAD} answers out of order`),
      )
      return
    }
    this.#held.set(index, payload)
    for (let p = this.#held.get(this.#next); p; p = this.#held.get(this.#next)) {
      this.#held.delete(this.#next)
      this.#ready.push(p)
      this.#next += 1
    }
    this.#wake?.()
  }

  /** End the call with `error` (its next `next()` rejects). */
  fail(error: unknown): void {
    this.#failure ??= error
    this.#wake?.()
  }

  /** The next answer in order; rejects on failure, abort, or `idleMs` without one. */
  async next(idleMs: number, signal?: AbortSignal): Promise<A2APayload> {
    for (;;) {
      const ready = this.#ready.shift()
      if (ready) return ready
      if (this.#failure !== undefined) throw this.#failure
      signal?.throwIfAborted()
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          reject(new AgentMsgError('unavailable', `no answer from ${this.peer} in ${idleMs} ms`))
        }, idleMs)
        const aborted = () => reject(signal?.reason)
        signal?.addEventListener('abort', aborted, { once: true })
        this.#wake = () => {
          clearTimeout(timer)
          signal?.removeEventListener('abort', aborted)
          this.#wake = undefined
          resolve()
        }
      })
    }
  }
}

const registries = new WeakMap<Agent, Map<string, CallReplies>>()

/** The calls in flight on `agent`, by conversation id (one listener per agent). */
export function callsOf(agent: Agent): Map<string, CallReplies> {
  let calls = registries.get(agent)
  if (calls) return calls
  const open = new Map<string, CallReplies>()
  agent.on('message', (m: ReceivedMessage) => {
    const call = open.get(m.conversationId)
    if (!call || m.from !== call.peer) return
    const payload = a2aPayload(m)
    if (payload?.index !== undefined && payload.phase !== 'request')
      call.add(payload.index, payload)
  })
  registries.set(agent, open)
  calls = open
  return calls
}
