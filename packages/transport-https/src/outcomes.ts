/**
 * The ends of a delivery as the sender reports them: the event, the error its promise rejects
 * with, and the later outcome (core `DeliveryEvent`) of a delivery nobody waits on.
 */
import { type DeliveryEvent, type ErrorCode, isAgentMsgError } from '@agentmsg/core'
import type { PeerError } from './attempt.js'
import { codeForStatus, DeliveryError, isErrorCode, retryableCode } from './delivery-error.js'
import type { OutboxEntry } from './outbox.js'
import type { RetryOutcome } from './retry.js'
import type { FailedEvent, OutboxUndeliverableEvent } from './sender-types.js'

/** A refusal: never retried (PROFILE §6: 4xx other than 429, redirects, refused addresses). */
export interface Refusal {
  status?: number | undefined
  /** The peer's code (any string) or ours. */
  code: string
  message: string
  cause?: unknown
  /** The peer's own code, verbatim. */
  peerCode?: string | undefined
}

/** A final refusal by the peer (or by the address policy before any request), from an attempt. */
export function refusalOf(
  outcome: { reason: string; status?: number },
  peer: PeerError,
  cause: unknown,
): Refusal {
  const code = peer.code ?? (isAgentMsgError(cause) ? cause.code : undefined)
  const { status } = outcome
  return {
    status,
    code: code ?? codeForStatus(status),
    message: peer.message ?? outcome.reason,
    cause,
    peerCode: peer.code,
  }
}

/** What a refusal of `entry` is reported as. */
export function failedOutcome(entry: OutboxEntry, r: Refusal) {
  const { target, attempts } = entry
  const messageId = entry.message.message_id
  const event: FailedEvent = {
    message_id: messageId,
    target,
    code: r.code,
    message: r.message,
    attempts,
  }
  if (r.status !== undefined) event.status = r.status
  const known: ErrorCode = isErrorCode(r.code) ? r.code : codeForStatus(r.status)
  const where = r.status === undefined ? '' : ` with ${r.status}`
  const error = new DeliveryError(
    'failed',
    known,
    `delivery of ${messageId} failed${where}: ${r.code}: ${r.message}`,
    {
      ...{ messageId, target, attempts, cause: r.cause },
      ...(r.status !== undefined ? { peerStatus: r.status } : {}),
      ...(r.peerCode !== undefined ? { peerCode: r.peerCode } : {}),
    },
  )
  const later: DeliveryEvent = {
    ...{ type: 'undeliverable', messageId, target },
    ...{ reason: `refused${where}: ${r.code}: ${r.message}`, code: known },
  }
  return { event, error, later }
}

/** What running out of time (the 24 h deadline) for `entry` is reported as. */
export function undeliverableOutcome(entry: OutboxEntry, reason: string) {
  const { target, attempts, firstAttempt } = entry
  const messageId = entry.message.message_id
  const event: OutboxUndeliverableEvent = {
    ...{ message_id: messageId, target, reason, attempts, firstAttempt },
  }
  const text = `message ${messageId} is undeliverable: ${reason}`
  const error = new DeliveryError('undeliverable', 'unavailable', text, {
    ...{ messageId, target, attempts },
  })
  const later: DeliveryEvent = { type: 'undeliverable', messageId, target, reason }
  return { event, error, later }
}

/**
 * The error of an attempt that failed retryably, for a caller that does not wait for the
 * retries: its code keeps a retryable status (429 or 5xx) and `retryAfter` in seconds.
 */
export function retryableError(entry: OutboxEntry, outcome: RetryOutcome, cause: unknown) {
  const { target, attempts } = entry
  const messageId = entry.message.message_id
  const retryAfterMs = outcome.kind === 'retry-after' ? outcome.retryAfterMs : undefined
  return new DeliveryError(
    'retryable',
    retryableCode(outcome.status),
    `delivery of ${messageId} to ${target.urls[0]} failed: ${outcome.reason}`,
    {
      ...{ messageId, target, attempts },
      ...(outcome.status !== undefined ? { peerStatus: outcome.status } : {}),
      ...(retryAfterMs !== undefined ? { retryAfter: Math.ceil(retryAfterMs / 1000) } : {}),
      ...(cause !== undefined ? { cause } : {}),
    },
  )
}
