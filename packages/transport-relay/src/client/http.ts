/** Relay endpoints, and relay answers read under PROFILE §4's byte caps. */
import { AgentMsgError, PROFILE, readBody } from '@agentmsg/core/http'

/** A relay endpoint as `fetch` sends it (WHATWG-serialised, which `signRequest` requires). */
export function relayEndpoint(
  relayUrl: string,
  path: string,
  query: Record<string, string | number | undefined> = {},
): string {
  const url = new URL(relayUrl + path)
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined) url.searchParams.set(name, String(value))
  }
  return url.href
}

/** A body of at most `maxBytes`; a longer one is cut off and is a retryable `unavailable`. */
export async function readCapped(
  res: Response,
  maxBytes: number,
  what: string,
  signal: AbortSignal,
): Promise<Uint8Array> {
  const bytes = await readBody(res, { maxBytes, signal })
  if (bytes !== undefined) return bytes
  throw new AgentMsgError('unavailable', `${what}: the relay's answer is over ${maxBytes} bytes`)
}

/** A JSON reply of at most `PROFILE.replyMaxBytes`, as an object (`{}` for any other JSON). */
export async function readReply(
  res: Response,
  what: string,
  signal: AbortSignal,
): Promise<Record<string, unknown>> {
  const bytes = await readCapped(res, PROFILE.replyMaxBytes, what, signal)
  try {
    const value: unknown = JSON.parse(new TextDecoder().decode(bytes))
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {}
  } catch (cause) {
    const text = `${what}: the relay answered ${res.status} with a body that is not JSON`
    throw new AgentMsgError('internal_error', text, { cause })
  }
}

/** How streams reconnect and acknowledgements retry: full jitter from 500 ms up to 30 s. */
export const STREAM_BACKOFF = { baseMs: 500, capMs: 30_000 } as const
