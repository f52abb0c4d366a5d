/** Why a delivery to an inbox ended without a 202, as one coded error (PROFILE §6 codes). */
import { AgentMsgError, type DeliveryTarget, type ErrorCode } from '@agentmsg/core'
import { ERROR_STATUS } from '@agentmsg/core/http'

/** How a delivery ended without a 202. */
export type DeliveryOutcomeKind = 'failed' | 'undeliverable' | 'closed' | 'retryable'

/** What a {@link DeliveryError} says about the delivery besides its code. */
export interface DeliveryErrorDetails {
  messageId: string
  target: DeliveryTarget
  attempts: number
  peerStatus?: number
  peerCode?: string
  /** Seconds the peer asked to wait (`Retry-After` of a 429 or 503). */
  retryAfter?: number
  cause?: unknown
}

/**
 * Why a send rejected after the message was accepted for delivery. `code` is a PROFILE §6
 * code: the peer's own when it is one, else one fitting the status (`unavailable` for
 * undeliverable and closed), so `status` and `shouldRetry()` tell whether trying again later
 * can help.
 */
export class DeliveryError extends AgentMsgError {
  /**
   * `failed`: refused, never retried; `undeliverable`: deadline passed; `closed`: sender
   * closed; `retryable`: the first attempt failed retryably (network, 5xx, 429) and the send was
   * not durable, so the delivery was cancelled.
   */
  readonly outcome: DeliveryOutcomeKind
  readonly messageId: string
  readonly target: DeliveryTarget
  readonly attempts: number
  /** The status the peer answered, if it answered. */
  readonly peerStatus: number | undefined
  /** The `code` of the peer's error body, verbatim (may be outside PROFILE §6). */
  readonly peerCode: string | undefined

  constructor(
    outcome: DeliveryOutcomeKind,
    code: ErrorCode,
    message: string,
    details: DeliveryErrorDetails,
  ) {
    super(code, message, {
      ...(details.cause !== undefined ? { cause: details.cause } : {}),
      ...(details.retryAfter !== undefined ? { retryAfter: details.retryAfter } : {}),
    })
    this.outcome = outcome
    this.messageId = details.messageId
    this.target = details.target
    this.attempts = details.attempts
    this.peerStatus = details.peerStatus
    this.peerCode = details.peerCode
  }
}

/** Status → PROFILE §6 code, for peers that send no (known) code. */
const STATUS_CODES: Record<number, ErrorCode> = {
  400: 'invalid_format',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited',
}

export function isErrorCode(code: string): code is ErrorCode {
  return Object.hasOwn(ERROR_STATUS, code)
}

/** A PROFILE §6 code for a refusal without one: 3xx → not_found (not the inbox), other → invalid_format. */
export function codeForStatus(status: number | undefined): ErrorCode {
  if (status === undefined) return 'forbidden'
  if (STATUS_CODES[status]) return STATUS_CODES[status]
  return status >= 300 && status <= 399 ? 'not_found' : 'invalid_format'
}

/**
 * The code of a retryable outcome (PROFILE §6 retries): 429 → `rate_limited`, 500 →
 * `internal_error`, other 5xx and no answer at all → `unavailable`. Each keeps a retryable status.
 */
export function retryableCode(status: number | undefined): ErrorCode {
  if (status === 429) return 'rate_limited'
  if (status === 500) return 'internal_error'
  return 'unavailable'
}
