/**
 * The RelayStore contract (PROFILE §9, SPEC §3.3) as a reusable suite: every store (memory,
 * SQLite, later PostgreSQL) runs `testRelayStore(name, factory)` and must pass all of it.
 */

import type {
  MailboxFullError,
  RelayQuota,
  RelayStorageFullError,
  RelayStore,
} from '@agentmsg/relay'
import { afterEach, beforeAll, describe } from 'vitest'
import { dedupeChecks } from './dedupe.js'
import { publishChecks } from './publish.js'
import { quotaChecks } from './quotas.js'
import { readChecks } from './read.js'
import { subscriptionChecks } from './subscriptions.js'

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

/** What the parts of the suite share (internal). */
export interface RelayStoreSuite {
  factory: RelayStoreFactory
  /** A store the suite closes and disposes after the test. */
  make(options?: { quota?: RelayQuota }): Promise<RelayStoreUnderTest>
  store(options?: { quota?: RelayQuota }): Promise<RelayStore>
  /** `@agentmsg/relay`'s error class for a full mailbox (loaded before the first test). */
  readonly MailboxFullError: typeof MailboxFullError
  /** `@agentmsg/relay`'s error class for the relay-wide storage cap. */
  readonly RelayStorageFullError: typeof RelayStorageFullError
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
    let errors: typeof import('@agentmsg/relay') | undefined
    // Loaded here rather than imported at the top, so importing the other suites of this
    // package does not load the relay server.
    beforeAll(async () => {
      errors = await import('@agentmsg/relay')
    })
    afterEach(async () => {
      for (const sut of open.splice(0)) {
        await sut.store.close()
        await sut.dispose?.()
      }
    })
    const suite: RelayStoreSuite = {
      factory,
      async make(options = {}) {
        const sut = await factory(options)
        open.push(sut)
        return sut
      },
      async store(options = {}) {
        return (await suite.make(options)).store
      },
      get MailboxFullError() {
        if (!errors) throw new Error('MailboxFullError is loaded before the first test')
        return errors.MailboxFullError
      },
      get RelayStorageFullError() {
        if (!errors) throw new Error('RelayStorageFullError is loaded before the first test')
        return errors.RelayStorageFullError
      },
    }
    subscriptionChecks(suite)
    publishChecks(suite)
    quotaChecks(suite)
    dedupeChecks(suite)
    readChecks(suite)
  })
}
