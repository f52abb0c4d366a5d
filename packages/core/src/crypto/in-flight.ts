/**
 * signMessage and verifyMessage calls under way in this realm. A call that is alone may run its
 * Ed25519 operation inline; with others in flight the thread pool runs them in parallel (the
 * `auto` policy of the Node provider, `crypto/node-mode.ts`, reads this count). The count is
 * taken at the call, not at the crypto: with inline operations the crypto calls never overlap,
 * while the calls themselves do as soon as callers keep several in flight.
 */
let calls = 0

/** @internal */
export function callStarted(): void {
  calls++
}

/** @internal */
export function callEnded(): void {
  calls--
}

/** @internal signMessage / verifyMessage calls started and not yet settled. */
export function callsInFlight(): number {
  return calls
}
