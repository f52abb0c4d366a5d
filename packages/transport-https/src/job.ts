/** The sender's in-memory state of one pending delivery. */
import type { DeliveryReceipt } from '@agentmsg/core'
import type { DeliveryError } from './delivery-error.js'
import type { OutboxEntry } from './outbox.js'

/**
 * How the first attempt of a delivery went: `settled` when the delivery is over (202, a
 * refusal, the sender closed or the delivery was cancelled: `promise` says which), `retry`
 * when it failed retryably and the next attempt is stored and scheduled.
 */
export type FirstAttempt = { kind: 'settled' } | { kind: 'retry'; error: DeliveryError }

export interface Job {
  entry: OutboxEntry
  body: string
  timer: unknown
  hasTimer: boolean
  /** An attempt is on the wire or its answer not yet classified. */
  inFlight: boolean
  /** The current attempt with its bookkeeping, for close() to wait on. */
  running: Promise<void> | undefined
  controller: AbortController | undefined
  settled: boolean
  /** Storage writes of this job, in order, so a late update cannot follow the removal. */
  chain: Promise<void>
  /** Settles with the final outcome. */
  promise: Promise<DeliveryReceipt>
  resolve(receipt: DeliveryReceipt): void
  reject(error: unknown): void
  /**
   * Nobody waits on `promise`: the outcome is reported to the sender's later-outcome hook
   * (resumed deliveries, and durable sends that went pending).
   */
  detached: boolean
  /** Resolves once the first attempt made by this sender is over (or the job settled first). */
  first: Promise<FirstAttempt>
  resolveFirst(first: FirstAttempt): void
}

export function newJob(entry: OutboxEntry, body: string, detached: boolean): Job {
  let resolve!: (r: DeliveryReceipt) => void
  let reject!: (e: unknown) => void
  const promise = new Promise<DeliveryReceipt>((res, rej) => {
    resolve = res
    reject = rej
  })
  // Resumed deliveries have no caller; their outcome is reported by events.
  promise.catch(() => {})
  let resolveFirst!: (first: FirstAttempt) => void
  const first = new Promise<FirstAttempt>((res) => (resolveFirst = res))
  return {
    entry,
    body,
    timer: undefined,
    hasTimer: false,
    inFlight: false,
    running: undefined,
    controller: undefined,
    settled: false,
    chain: Promise.resolve(),
    promise,
    resolve,
    reject,
    detached,
    first,
    resolveFirst,
  }
}
