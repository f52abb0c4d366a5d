import { AgentMsgError, isAgentMsgError } from '@agentmsg/core/http'

/**
 * A failure at one of the agent's relays (it listens on several): the error's `code`,
 * `retryAfter`, `field`, `peerStatus`, and `relayUrl`; `cause` the original error.
 */
export class RelayError extends AgentMsgError {
  /** The relay that failed. */
  readonly relayUrl: string

  constructor(relayUrl: string, error: unknown) {
    const e = isAgentMsgError(error) ? error : undefined
    const text = error instanceof Error ? error.message : String(error)
    super(e?.code ?? 'internal_error', `relay ${relayUrl}: ${text}`, {
      cause: error,
      retryAfter: e?.retryAfter,
      field: e?.field,
      peerStatus: e?.peerStatus,
    })
    this.relayUrl = relayUrl
  }
}

/** `error` named by `relayUrl`, once. */
export function relayError(relayUrl: string, error: unknown): RelayError {
  return error instanceof RelayError && error.relayUrl === relayUrl
    ? error
    : new RelayError(relayUrl, error)
}
