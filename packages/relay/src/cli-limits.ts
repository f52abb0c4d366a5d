/**
 * The rate-limit flags of `agentmsg relay` (PROFILE §6 limits as the relay applies them,
 * RelayLimits): an operator raises them for a load test or a busy deployment without code.
 * Issue 12: the CLI had no way to, so a load test from one address hit 429 at 600/min.
 */
import type { RelayLimits } from './server/types.js'

/** The `parseArgs` options of these flags. */
export const LIMIT_FLAGS = {
  'rate-limit': { type: 'string' },
  burst: { type: 'string' },
  'sender-rate-limit': { type: 'string' },
  'sender-burst': { type: 'string' },
  'max-reads-per-address': { type: 'string' },
  'streams-per-agent': { type: 'string' },
} as const

export const LIMITS_USAGE = `  --rate-limit N    requests per minute from one client address (IPv6: per /64), or
                    "unlimited" for a load test from one machine (default 600)
  --burst N         requests one address may send at once before the rate applies (default 100)
  --sender-rate-limit N   publishes per minute per verified sender, or "unlimited" (default 60)
  --sender-burst N  a sender's burst (default 20)
  --max-reads-per-address N   request bodies read at once per address (default 8)
  --streams-per-agent N       open SSE and WebSocket streams per agent (default 4)`

type LimitValues = Partial<Record<keyof typeof LIMIT_FLAGS, string>>

/** A positive whole number of a flag, or Infinity for "unlimited" when allowed. */
function count(
  flag: string,
  text: string,
  unlimited: boolean,
  fail: (message: string) => Error,
): number {
  if (unlimited && text === 'unlimited') return Number.POSITIVE_INFINITY
  if (!/^[0-9]{1,9}$/.test(text) || Number(text) < 1) {
    throw fail(
      `--${flag} ${text} is not a positive whole number${unlimited ? ' or "unlimited"' : ''}`,
    )
  }
  return Number(text)
}

/** The RelayLimits the flags ask for, or undefined when none was given (the defaults apply). */
export function limitsFromFlags(
  values: LimitValues,
  fail: (message: string) => Error,
): RelayLimits | undefined {
  const limits: RelayLimits = {}
  const rate = (flag: keyof typeof LIMIT_FLAGS, unlimited: boolean) => {
    const text = values[flag]
    return text === undefined ? undefined : count(flag, text.trim(), unlimited, fail)
  }
  const perMinute = rate('rate-limit', true)
  const burst = rate('burst', false)
  if (perMinute !== undefined || burst !== undefined) {
    limits.perAddress = {
      ...(perMinute !== undefined ? { perMinute } : {}),
      ...(burst !== undefined ? { burst } : {}),
    }
  }
  const senderPerMinute = rate('sender-rate-limit', true)
  const senderBurst = rate('sender-burst', false)
  if (senderPerMinute !== undefined || senderBurst !== undefined) {
    limits.perSender = {
      ...(senderPerMinute !== undefined ? { perMinute: senderPerMinute } : {}),
      ...(senderBurst !== undefined ? { burst: senderBurst } : {}),
    }
  }
  const reads = rate('max-reads-per-address', false)
  if (reads !== undefined) limits.maxReadsPerAddress = reads
  const streams = rate('streams-per-agent', false)
  if (streams !== undefined) limits.streamsPerAgent = streams
  return Object.keys(limits).length > 0 ? limits : undefined
}
