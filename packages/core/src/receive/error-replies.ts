// Error phase messages (PROFILE §7), routed only where the sender cannot forge: a URL agent's own
// identity document, or a verified message's relays.
import { agentEndpoints, parseAgentId } from '../agent-id.js'
import { createMessage } from '../create-message.js'
import { AgentMsgError, type ErrorPhaseCode, isAgentMsgError } from '../errors.js'
import type { IdentityDocument } from '../identity/document.js'
import { PROFILE } from '../profile.js'
import type { Message, UnsignedMessage } from '../types.js'
import type { ErrorReplySender, ErrorReplyTarget, ReceiverOptions } from './types.js'

/** The unsigned error phase message answering `original` (PROFILE §7); never for an error. */
export function createErrorMessage(o: {
  original: Message
  from: string
  code: ErrorPhaseCode
  message: string
  /** @default original.sequence + 1 */
  sequence?: number
  relays?: string[]
  date?: number
}): UnsignedMessage {
  if (o.original.phase === 'error') {
    throw new TypeError('an error phase message is never answered with another (PROFILE §7)')
  }
  return createMessage({
    from: o.from,
    to: o.original.from.agent,
    conversationId: o.original.conversation_id,
    sequence: o.sequence ?? o.original.sequence + 1,
    phase: 'error',
    contentType: 'application/json',
    parts: [
      {
        type: 'data',
        data: { code: o.code, message: o.message, ref_message_id: o.original.message_id },
      },
    ],
    relays: o.relays,
    date: o.date,
  })
}

/** Whether an error phase message may go out: to verified senders, one a minute per peer (§7). */
export class ErrorReplyGate {
  readonly #last = new Map<string, number>()
  readonly #interval: number
  readonly #now: () => number

  constructor(options: { intervalMs?: number; now?: () => number } = {}) {
    this.#interval = options.intervalMs ?? PROFILE.errorReplyIntervalMs
    this.#now = options.now ?? Date.now
  }

  allow(original: Message, verified: boolean): boolean {
    if (!verified || original.phase === 'error') return false
    const now = this.#now()
    const peer = original.from.agent
    const last = this.#last.get(peer)
    if (last !== undefined && now - last < this.#interval) return false
    this.#last.delete(peer)
    this.#last.set(peer, now)
    for (const [k, t] of this.#last) {
      if (now - t < this.#interval) break
      this.#last.delete(k)
    }
    return true
  }
}

export class ErrorReplies {
  readonly #gate: ErrorReplyGate

  constructor(
    readonly o: ReceiverOptions,
    readonly sender: ErrorReplySender,
    readonly onError: (error: unknown) => void,
    now: () => number,
  ) {
    this.#gate = new ErrorReplyGate({ now })
  }

  // Verified: also through its signed `from.relays`; else only a URL agent, at the inbox of the
  // document the verifier used.
  send(original: Message, code: ErrorPhaseCode, text: string, verified: boolean): void {
    const agent = original.from.agent
    const isUrl = parseAgentId(agent, 'from.agent').kind === 'url'
    if ((!verified && !isUrl) || !this.#gate.allow(original, true)) return
    this.#deliver(original, code, text, verified, isUrl).catch((error: unknown) => {
      // Never the socket, TLS or DNS text: the peer chose the address, and the application's
      // logs must not become a port scanner's (PROFILE §4).
      const failed = isAgentMsgError(error) ? error.code : 'unavailable'
      this.onError(new AgentMsgError(failed, `an error reply to ${agent} could not be delivered`))
    })
  }

  async #deliver(
    original: Message,
    code: ErrorPhaseCode,
    text: string,
    verified: boolean,
    isUrl: boolean,
  ): Promise<void> {
    const agent = original.from.agent
    const to: ErrorReplyTarget = { agent }
    if (isUrl) {
      const doc = await this.#identityOf(agent)
      if (doc) to.inbox = doc.endpoints.inbox
      else if (verified) to.inbox = agentEndpoints(agent).inbox
      else return
    }
    const relays = original.from.relays
    if (verified && relays && relays.length > 0) to.relays = [...relays]
    const reply = createErrorMessage({ original, from: this.o.agentId, code, message: text })
    await this.sender.send(reply, to)
  }

  async #identityOf(agent: string): Promise<IdentityDocument | undefined> {
    if (this.o.identityOf) return this.o.identityOf(agent)
    const source = this.o.resolver as { document?: (agent: string) => Promise<unknown> }
    if (typeof source.document !== 'function') return undefined
    const doc = (await source.document(agent)) as Partial<IdentityDocument> | undefined
    // An IdentityDocumentCache answers a KeyResolution when it has no document.
    return doc && typeof doc.agent_id === 'string' && doc.endpoints
      ? (doc as IdentityDocument)
      : undefined
  }
}
