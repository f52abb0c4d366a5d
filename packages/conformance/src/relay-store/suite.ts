/** The RelayStore contract (PROFILE §9, SPEC §3.3) as a suite every store runs. */
import type { RelayQuota, RelayStore } from '@agentmsg/relay'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { publishChecks } from './publish.js'
import { quotaChecks } from './quotas.js'
import { readChecks } from './read.js'

/** A store under test, with a way to count stored messages from outside the store. */
export interface RelayStoreUnderTest {
  store: RelayStore
  /** Messages physically stored (a topic message once, however many mailboxes reference it). */
  storedMessages(): number | Promise<number>
  /** Clean up after `store.close()` (temp files…). */
  dispose?(): void | Promise<void>
}

/** Opens an empty store with the given quota. */
export type RelayStoreFactory = (options: {
  quota?: RelayQuota
}) => RelayStoreUnderTest | Promise<RelayStoreUnderTest>

type Relay = typeof import('@agentmsg/relay')
type Body = (store: RelayStore, sut: RelayStoreUnderTest) => Promise<void>

/** What the parts of the suite share. */
export interface RelayStoreSuite {
  factory: RelayStoreFactory
  /** A vitest test of a fresh store (with `quota`), closed and disposed after it. */
  test(name: string, ...args: [Body] | [RelayQuota, Body]): void
  /** `@agentmsg/relay`'s error classes (loaded before the first test). */
  relay: Pick<Relay, 'MailboxFullError' | 'RelayStorageFullError'>
  /** Expects `publish` to reject with a `MailboxFullError`. */
  full(publish: Promise<unknown>): Promise<void>
  /** Expects `publish` to reject with a `RelayStorageFullError`. */
  relayFull(publish: Promise<unknown>): Promise<void>
}

/**
 * Define the RelayStore contract tests (vitest) for the stores `factory` opens; each call of
 * `factory` must return an empty store.
 *
 * @example
 * testRelayStore('memory', ({ quota }) => {
 *   const store = memoryRelayStore({ quota })
 *   return { store, storedMessages: () => store.storedMessages() }
 * })
 */
export function testRelayStore(name: string, factory: RelayStoreFactory): void {
  describe(`RelayStore contract: ${name}`, () => {
    const open: RelayStoreUnderTest[] = []
    // Loaded here rather than imported at the top, so importing the other suites of this
    // package does not load the relay server (an optional peer dependency).
    beforeAll(async () => {
      const { MailboxFullError, RelayStorageFullError } = await import('@agentmsg/relay')
      suite.relay = { MailboxFullError, RelayStorageFullError }
    })
    afterEach(async () => {
      for (const sut of open.splice(0)) {
        await sut.store.close()
        await sut.dispose?.()
      }
    })
    const suite: RelayStoreSuite = {
      factory,
      test(name, ...args) {
        const [quota, body] = args.length === 1 ? [undefined, args[0]] : args
        it(name, async () => {
          const sut = await factory(quota ? { quota } : {})
          open.push(sut)
          await body(sut.store, sut)
        })
      },
      relay: {} as RelayStoreSuite['relay'],
      full: (p) => expect(p).rejects.toBeInstanceOf(suite.relay.MailboxFullError),
      relayFull: (p) => expect(p).rejects.toBeInstanceOf(suite.relay.RelayStorageFullError),
    }
    publishChecks(suite)
    quotaChecks(suite)
    readChecks(suite)
  })
}
