/**
 * One delivery attempt: a single POST of the message to the inbox (SPEC §4.1, PROFILE §6),
 * classified by the retry rules. Each attempt is one ky request with ky's own retries off
 * (`retry: 0`: they would live in memory on real timers); the durable schedule above it retries.
 */
import ky from 'ky'
import type { Clock } from './clock.js'
import { type AttemptOutcome, classifyError, classifyResponse } from './retry.js'

/** Most bytes of an error body read. */
const ERROR_BODY_LIMIT = 16_384

/** The `{status:"error", code, message}` body of a refusal, when it had a readable one. */
export interface PeerError {
  code?: string
  message?: string
}

/** What one attempt came to. */
export interface AttemptResult {
  outcome: AttemptOutcome
  /** The peer's error body, read for a final refusal only. */
  peer: PeerError
  /** The error of an attempt that got no answer. */
  cause?: unknown
}

/** What an attempt needs. */
export interface AttemptInput {
  url: string
  body: string
  messageId: string
  fetch: typeof fetch
  timeoutMs: number
  clock: Clock
  /** Aborted when the delivery is cancelled or the sender closes. */
  signal: AbortSignal
}

/**
 * POST the message once. Resolves with the classified outcome; an attempt aborted through
 * `signal` rejects (the caller checks `signal.aborted`: such an attempt does not count).
 */
export async function attemptDelivery(input: AttemptInput): Promise<AttemptResult> {
  try {
    const response = await ky.post(input.url, {
      body: input.body,
      headers: {
        'Content-Type': 'application/json; charset=utf-8',
        Accept: 'application/json',
        'Idempotency-Key': input.messageId,
      },
      retry: 0,
      timeout: input.timeoutMs,
      throwHttpErrors: false,
      redirect: 'manual',
      fetch: input.fetch,
      signal: input.signal,
    })
    const outcome: AttemptOutcome =
      response.type === 'opaqueredirect'
        ? { kind: 'fail', reason: 'redirect: inbox deliveries do not follow redirects' }
        : classifyResponse(response.status, response.headers, input.clock.now())
    if (outcome.kind === 'fail') {
      return { outcome, peer: await readPeerError(response, input.timeoutMs) }
    }
    void response.body?.cancel().catch(() => {})
    return { outcome, peer: {} }
  } catch (error) {
    if (input.signal.aborted) throw error
    return { outcome: classifyError(error), peer: {}, cause: error }
  }
}

/** The `{status:"error", code, message}` body of a refusal, if it has one (size- and time-capped). */
async function readPeerError(response: Response, timeoutMs: number): Promise<PeerError> {
  const reader = response.body?.getReader()
  if (!reader) return {}
  const timer = setTimeout(() => void reader.cancel().catch(() => {}), timeoutMs)
  const chunks: Uint8Array[] = []
  let total = 0
  try {
    while (total < ERROR_BODY_LIMIT) {
      const { done, value } = await reader.read()
      if (done) break
      chunks.push(value)
      total += value.length
    }
  } catch {
    return {}
  } finally {
    clearTimeout(timer)
    void reader.cancel().catch(() => {})
  }
  if (total >= ERROR_BODY_LIMIT) return {}
  const bytes = new Uint8Array(total)
  let at = 0
  for (const c of chunks) {
    bytes.set(c, at)
    at += c.length
  }
  try {
    const body: unknown = JSON.parse(new TextDecoder().decode(bytes))
    if (typeof body !== 'object' || body === null) return {}
    const { code, message } = body as { code?: unknown; message?: unknown }
    const out: PeerError = {}
    if (typeof code === 'string' && code.length <= 200) out.code = code
    if (typeof message === 'string') out.message = message.slice(0, 1000)
    return out
  } catch {
    return {}
  }
}
