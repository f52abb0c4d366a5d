/** Every wire error code of PROFILE §6 and its HTTP status: the one status ↔ code table. */
export const ERROR_STATUS = {
  /** Malformed: not I-JSON, a field missing or of the wrong type. */
  invalid_format: 400,
  /** `date` outside the window, or the TTL has passed. */
  stale_message: 400,
  /** No usable signature verifies. */
  invalid_signature: 401,
  /** The sender's key cannot be found. */
  unknown_sender: 401,
  /** Signed below the conversation's level. */
  insufficient_auth_level: 401,
  /** Signed with a revoked or long-retired key. */
  key_revoked: 401,
  /** Relay agent auth missing. */
  unauthorized: 401,
  /** Not allowed. */
  forbidden: 403,
  /** No such resource (e.g. mailbox). */
  not_found: 404,
  /** Wrong method for the path. */
  method_not_allowed: 405,
  /** Over a size cap. */
  payload_too_large: 413,
  /** Not `application/json`. */
  unsupported_media_type: 415,
  /** Over a limit; retry after `Retry-After`. */
  rate_limited: 429,
  /** The server failed. */
  internal_error: 500,
  /** Not now (a quota, a failed lookup); retry after `Retry-After`. */
  unavailable: 503,
} as const

/** A wire error code (PROFILE §6). */
export type ErrorCode = keyof typeof ERROR_STATUS

/** Codes in the body of an error phase message (PROFILE §7). */
export type ErrorPhaseCode =
  | 'version_mismatch'
  | 'unknown_phase'
  | 'invalid_signature'
  | 'unknown_sender'
  | 'key_revoked'
  | 'insufficient_auth_level'

const BRAND = Symbol.for('agentmsg.error')

/** Options for {@link AgentMsgError}. */
export interface AgentMsgErrorOptions {
  /** Never serialised onto the wire. */
  cause?: unknown
  /** Seconds to wait before retrying (429, 503). */
  retryAfter?: number
  /** The message field at fault, e.g. `security.signatures[0].sig`. */
  field?: string
  /** The status a peer answered, and its body's `code` verbatim (may be outside PROFILE §6). */
  peerStatus?: number
  peerCode?: string
}

/** The SDK's error; test with {@link isAgentMsgError}: errors may cross bundles or realms. */
export class AgentMsgError extends Error {
  /** The class name, for logs. */
  override readonly name = 'AgentMsgError'
  /** The wire code (PROFILE §6). */
  readonly code: ErrorCode
  /** The HTTP status of `code`. */
  readonly status: number
  /** Seconds to wait before retrying (429, 503). */
  readonly retryAfter: number | undefined
  /** The message field at fault. */
  readonly field: string | undefined
  /** The status a peer answered. */
  readonly peerStatus: number | undefined
  /** The peer's body `code`, verbatim. */
  readonly peerCode: string | undefined
  /** @internal The brand {@link isAgentMsgError} tests. */
  readonly [BRAND] = true

  constructor(code: ErrorCode, message: string, options: AgentMsgErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.code = code
    this.status = ERROR_STATUS[code]
    this.retryAfter = options.retryAfter
    this.field = options.field
    this.peerStatus = options.peerStatus
    this.peerCode = options.peerCode
  }

  /** True when the same request may succeed later (429, 5xx): the one retryability rule. */
  shouldRetry(): boolean {
    return this.status === 429 || this.status >= 500
  }

  /** The PROFILE §6 error body, `{ status: 'error', code, message }`. */
  toJSON(): { status: 'error'; code: ErrorCode; message: string } {
    return { status: 'error', code: this.code, message: this.message }
  }
}

/** True for any {@link AgentMsgError}, also one from another copy of this package. */
export function isAgentMsgError(value: unknown): value is AgentMsgError {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as Record<symbol, unknown>)[BRAND] === true
  )
}

/** A peer status's code when its body names none: 3xx `not_found`, 408/5xx `unavailable`. */
export function codeForStatus(status: number): ErrorCode {
  if (status === 401) return 'unauthorized'
  // The first code of a status is its general one (invalid_format before stale_message).
  const code = (Object.keys(ERROR_STATUS) as ErrorCode[]).find((c) => ERROR_STATUS[c] === status)
  if (code) return code
  if (status >= 300 && status < 400) return 'not_found'
  return status === 408 || status >= 500 ? 'unavailable' : 'invalid_format'
}

/** An `invalid_format` error; `field` names the message field at fault. */
export function invalidFormat(message: string, field?: string): AgentMsgError {
  return new AgentMsgError('invalid_format', field ? `${field}: ${message}` : message, { field })
}

/** A count option: a positive safe integer, else a RangeError naming it. */
export function positiveInt(value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new RangeError(`${name} must be a positive integer`)
  }
  return value
}

/** A duration option: a finite number ≥ 0, else a RangeError naming it. */
export function nonNegative(value: number, name: string): number {
  if (!(Number.isFinite(value) && value >= 0)) {
    throw new RangeError(`${name} must be a finite number ≥ 0`)
  }
  return value
}
