/**
 * Errors of listening on one of the agent's relays, named by the relay: an agent with several
 * relays reports each by its URL (PROFILE §9 client failover: the others keep working).
 */
import { AgentMsgError, isAgentMsgError } from '@agentmsg/core'

/**
 * A failure at one relay: its `code` (and `status`, `retryAfter`) is the underlying error's
 * (`unavailable` for a relay that cannot be reached; the relay's own for a refusal, such as
 * `forbidden` or `invalid_signature`), `relayUrl` the relay, `cause` the original error.
 */
export class RelayError extends AgentMsgError {
  readonly relayUrl: string

  constructor(relayUrl: string, error: unknown) {
    const known = isAgentMsgError(error)
    const text = error instanceof Error ? error.message : String(error)
    super(known ? error.code : 'internal_error', `relay ${relayUrl}: ${text}`, {
      cause: error,
      ...(known && error.retryAfter !== undefined ? { retryAfter: error.retryAfter } : {}),
      ...(known && error.field !== undefined ? { field: error.field } : {}),
    })
    this.relayUrl = relayUrl
  }
}

/** `error` named by `relayUrl` (once: an error naming it already is passed through). */
export function relayError(relayUrl: string, error: unknown): RelayError {
  return error instanceof RelayError && error.relayUrl === relayUrl
    ? error
    : new RelayError(relayUrl, error)
}

/**
 * A refusal: the relay answered, and no retry can change its answer (a 4xx other than 429,
 * PROFILE §9), unlike a relay that is down, slow or busy.
 */
export function isRefusal(error: unknown): boolean {
  return isAgentMsgError(error) && !error.shouldRetry()
}
