/** The RelayStore contract (PROFILE §9, SPEC §3.3) as a suite every store runs. */
import type { RelayQuota, RelayStore } from '@agentmsg/relay'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { publishChecks } from './publish.js'
import { quotaChecks } from './quotas.js'
import { readChecks } from './read.js'

/** A store under test; `dispose` cleans up after `store.close()` (temp files…). */
export interface RelayStoreUnderTest {
  store: RelayStore
  /** Messages physically stored (a topic message once, however many mailboxes reference it). */
  storedMessages(): number | Promise<number>
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
  /** A vitest test of a fresh store, closed and disposed after it. */
  test(name: string, body: Body): void
  /** A vitest test opening its own stores: `open(quota)`, each closed and disposed after it. */
  it(
    name: string,
    body: (open: (quota: RelayQuota) => Promise<Parameters<Body>>) => Promise<void>,
  ): void
  /** `@agentmsg/relay`'s error classes (loaded before the first test). */
  relay: Pick<Relay, 'MailboxFullError' | 'RelayStorageFullError'>
  /** Expect `publish` to reject with a `MailboxFullError` / a `RelayStorageFullError`. */
  full(publish: Promise<unknown>): Promise<void>
  relayFull(publish: Promise<unknown>): Promise<void>
}

/**
 * The RelayStore contract tests (vitest) for the stores `factory` opens, an empty one each call.
 * @example
 * testRelayStore('memory', ({ quota }) => {
 *   const store = memoryRelayStore({ quota })
 *   return { store, storedMessages: () => store.storedMessages() }
 * })
 */
export function testRelayStore(name: string, factory: RelayStoreFactory): void {
  describe(`RelayStore contract: ${name}`, () => {
    const opened: RelayStoreUnderTest[] = []
    const open = async (quota?: RelayQuota): Promise<Parameters<Body>> => {
      const sut = await factory(quota ? { quota } : {})
      opened.push(sut)
      return [sut.store, sut]
    }
    // Loaded here, so the other suites do not load the relay (an optional peer dependency).
    beforeAll(async () => {
      suite.relay = await import('@agentmsg/relay')
    })
    afterEach(async () => {
      for (const sut of opened.splice(0)) {
        await sut.store.close()
        await sut.dispose?.()
      }
    })
    const suite: RelayStoreSuite = {
      factory,
      test: (name, body) => it(name, async () => body(...(await open()))),
      it: (name, body) => it(name, () => body(open)),
      relay: {} as RelayStoreSuite['relay'],
      full: (p) => expect(p).rejects.toBeInstanceOf(suite.relay.MailboxFullError),
      relayFull: (p) => expect(p).rejects.toBeInstanceOf(suite.relay.RelayStorageFullError),
    }
    publishChecks(suite)
    quotaChecks(suite)
    readChecks(suite)
  })
}
