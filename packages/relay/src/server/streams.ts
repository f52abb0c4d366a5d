/**
 * The caps on open SSE and WebSocket streams (PROFILE §9): per agent, per client address bucket
 * (§6: IPv6 per /64), and the unsent bytes of all streams together, so the memory streams hold
 * for one client address is bounded whatever it subscribes to or fails to read.
 */
import { type ErrorCode, PROFILE } from '@agentmsg/core'
import type { RelayLimits, RelayObserver, StreamKind } from './types.js'

/** An open stream's place under the caps. */
export interface StreamSlot {
  /** Bytes queued for the client (+n), or taken by it (−n). */
  unsent(delta: number): void
  /** Once, when the stream ends: its places, and the bytes it still held, are given back. */
  release(): void
}

/** A stream refused: 429 at a count cap, 503 while the relay holds too much unsent. */
export interface StreamRefusal {
  code: Extract<ErrorCode, 'rate_limited' | 'unavailable'>
  message: string
  retryAfter: number
}

/** `Retry-After` of a refused stream: a place frees when a stream ends or is read. */
const RETRY_AFTER = 15

export function streamCaps(limits: RelayLimits, observer?: RelayObserver) {
  const perAgent = limits.streamsPerAgent ?? PROFILE.streamsPerAgent
  const perAddress = limits.streamsPerAddress ?? PROFILE.streamsPerAddress
  const maxUnsent = limits.maxUnsentBytes ?? PROFILE.relayUnsentBytes
  const agents = new Map<string, number>()
  const buckets = new Map<string, number>()
  let unsent = 0
  const add = (map: Map<string, number>, key: string, n: number) => {
    const left = (map.get(key) ?? 0) + n
    if (left > 0) map.set(key, left)
    else map.delete(key)
  }
  const refuse = (code: StreamRefusal['code'], message: string): StreamRefusal => ({
    code,
    message,
    retryAfter: RETRY_AFTER,
  })

  return {
    /** A place for a stream of `agent` from the client-address `bucket`, or the refusal. */
    claim(agent: string, kind?: StreamKind, bucket?: string): StreamSlot | StreamRefusal {
      if ((agents.get(agent) ?? 0) >= perAgent) {
        return refuse('rate_limited', `at most ${perAgent} open streams per agent; retry later`)
      }
      if (bucket !== undefined && (buckets.get(bucket) ?? 0) >= perAddress) {
        const message = `at most ${perAddress} open streams per client address; retry later`
        return refuse('rate_limited', message)
      }
      if (unsent > maxUnsent) {
        return refuse('unavailable', 'the relay holds too much unsent stream data; retry later')
      }
      add(agents, agent, 1)
      if (bucket !== undefined) add(buckets, bucket, 1)
      if (kind !== undefined) observer?.streamOpened?.(kind)
      let held = 0
      let released = false
      return {
        unsent(delta) {
          if (released) return
          held += delta
          unsent += delta
        },
        release() {
          if (released) return
          released = true
          unsent -= held
          add(agents, agent, -1)
          if (bucket !== undefined) add(buckets, bucket, -1)
          if (kind !== undefined) observer?.streamClosed?.(kind)
        },
      }
    },
    /** Open streams of one agent, or of all. */
    open(agent?: string): number {
      if (agent !== undefined) return agents.get(agent) ?? 0
      return [...agents.values()].reduce((a, n) => a + n, 0)
    },
  }
}
