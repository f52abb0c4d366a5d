// "The database cannot be reached now" becomes `unavailable` (503 with Retry-After, PROFILE §6),
// so clients retry elsewhere or later instead of reading a 500; the operator hears the error.
import { AgentMsgError } from '@agentmsg/core'

/** Seconds a client is told to wait while the database is unreachable. */
const RETRY_AFTER = 5

/** Node socket errors of a connection that failed or broke. */
const SOCKET_CODES = new Set(
  'ECONNREFUSED ECONNRESET ETIMEDOUT EPIPE ENOTFOUND EHOSTUNREACH ENETUNREACH EAI_AGAIN'.split(' '),
)

/**
 * SQLSTATE classes and codes of an unreachable or unwritable server: 08 connection exception,
 * 53 insufficient resources (too many connections), 57P01–57P03 shut down / starting up,
 * 25006 read-only transaction (a standby during a failover).
 */
const isUnavailableState = (code: string) => /^(08|53|57P0[123]$|25006$)/.test(code)

/** node-postgres's own messages for a connection it lost or could not get. */
const DRIVER_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection refused/

/** True when `error` says the database is unreachable (or not writable) right now. */
export function isPostgresUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false
  const code = (error as { code?: unknown }).code
  if (typeof code === 'string' && (SOCKET_CODES.has(code) || isUnavailableState(code))) return true
  if (error instanceof AggregateError) return error.errors.some(isPostgresUnavailable)
  return DRIVER_MESSAGES.test(error.message)
}

/**
 * A server error without what may quote a statement's values (agent and message ids, which
 * the relay's logs never carry, relay-log.ts): `where`, `detail`, `hint`, `internalQuery` and the
 * message past its first quote or colon are dropped; `code` (SQLSTATE), `severity` and `routine`
 * remain. Every error out of the store, and to its `onError`, passes here.
 */
export function redactPostgresError(error: unknown): unknown {
  const e = error as { severity?: unknown; code?: string; routine?: string }
  if (!(error instanceof Error) || typeof e.severity !== 'string') return error
  const what = error.message.split(/["':]/, 1)[0]?.trim()
  const { code, routine } = e
  return Object.assign(new Error(`PostgreSQL ${e.severity} ${code}: ${what}`), { code, routine })
}

/** `error` as the relay should see it: `unavailable` when the database is unreachable. */
export function asStoreError(raw: unknown, onError: (error: unknown) => void): unknown {
  const error = redactPostgresError(raw)
  if (!isPostgresUnavailable(error)) return error
  onError(error)
  return new AgentMsgError('unavailable', 'the relay store is unavailable; retry later', {
    retryAfter: RETRY_AFTER,
  })
}
