/**
 * Error phase messages from a receiver (PROFILE §7): built with `createErrorMessage`, gated by
 * `ErrorReplyGate` (one a minute per peer, never answering an error), and routed only to places
 * the sender cannot forge: a URL agent's own identity document, or a verified message's relays.
 */
import { agentEndpoints, parseAgentId } from '../agent-id.js'
import { createErrorMessage, ErrorReplyGate } from '../error-message.js'
import { AgentMsgError, type ErrorPhaseCode, isAgentMsgError } from '../errors.js'
import type { IdentityDocument } from '../identity/document.js'
import type { KeyResolver } from '../resolver.js'
import type { Message } from '../types.js'
import type { ErrorReplySender, ErrorReplyTarget } from './types.js'

/** What {@link ErrorReplies} needs from the receiver's options. */
export interface ErrorRepliesOptions {
  agentId: string
  sender: ErrorReplySender | undefined
  resolver: KeyResolver
  identityOf: ((agent: string) => Promise<IdentityDocument | undefined>) | undefined
  onError: (error: unknown) => void
  now: () => number
}

type DocumentSource = { document(agent: string): Promise<unknown> }

export class ErrorReplies {
  readonly #o: ErrorRepliesOptions
  readonly #gate: ErrorReplyGate

  constructor(options: ErrorRepliesOptions) {
    this.#o = options
    this.#gate = new ErrorReplyGate({ now: options.now })
  }

  /**
   * Send an error phase message answering `original`, in the background. `verified` says the
   * signature verified (protocol errors, auth level): then the signed `from.relays` may be used
   * and a URL agent's well-known inbox is the fallback. Otherwise (signature, key) only a URL
   * agent is answered, and only at the inbox of the identity document the verifier used.
   */
  send(original: Message, code: ErrorPhaseCode, text: string, verified: boolean): void {
    const sender = this.#o.sender
    if (!sender) return
    const agent = original.from.agent
    const isUrl = parseAgentId(agent, 'from.agent').kind === 'url'
    if (!verified && !isUrl) return
    // Unverified failures are answered too, but only at the real agent's own inbox, so the
    // gate's "verified" condition holds for where the message goes (PROFILE §7).
    if (!this.#gate.allow(original, true)) return
    this.#deliver(sender, original, code, text, verified, isUrl).catch((error: unknown) =>
      this.#o.onError(scrubbed(error, agent)),
    )
  }

  async #deliver(
    sender: ErrorReplySender,
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
    const reply = createErrorMessage({ original, from: this.#o.agentId, code, message: text })
    await sender.send(reply, to)
  }

  async #identityOf(agent: string): Promise<IdentityDocument | undefined> {
    if (this.#o.identityOf) return this.#o.identityOf(agent)
    const source = this.#o.resolver as Partial<DocumentSource>
    if (typeof source.document !== 'function') return undefined
    const doc = (await source.document(agent)) as Partial<IdentityDocument> | undefined
    // An IdentityDocumentCache answers a KeyResolution when it has no document.
    return doc && typeof doc.agent_id === 'string' && doc.endpoints
      ? (doc as IdentityDocument)
      : undefined
  }
}

/**
 * What the application hears of an error reply that could not be delivered. The peer chose
 * where it goes (its document's inbox, its signed relays), so the failure says only that the
 * request failed, never the socket, TLS or DNS text (PROFILE §4): an application logging its
 * `error` events must not turn them into a port scanner's log for whoever sent the message.
 */
function scrubbed(error: unknown, agent: string): AgentMsgError {
  const code = isAgentMsgError(error) ? error.code : 'unavailable'
  return new AgentMsgError(code, `an error reply to ${agent} could not be delivered`)
}
