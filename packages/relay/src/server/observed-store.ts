/**
 * The relay's store as its observer sees it (issue 14): store writes timed from request to
 * durable commit, and the entries a feed or a retrieve read counted as deliveries of one mode.
 * Wrappers, so the endpoints and the stores stay as they are; a relay without an observer uses
 * its store directly.
 */
import { performance } from 'node:perf_hooks'
import type { RelayStore } from '../store/types.js'
import type { RelayContext } from './context.js'
import type { FeedContext } from './feed.js'
import type { DeliveryMode, RelayObserver } from './types.js'

/**
 * `store` with some methods replaced; every other member is the store's own, bound to it (a
 * store may be a class instance with private fields).
 */
function overlay(store: RelayStore, replaced: Partial<RelayStore>): RelayStore {
  const bound = new Map<PropertyKey, unknown>()
  return new Proxy(store, {
    get(target, prop) {
      if (Object.hasOwn(replaced, prop)) return replaced[prop as keyof RelayStore]
      const cached = bound.get(prop)
      if (cached !== undefined) return cached
      const value: unknown = Reflect.get(target, prop, target)
      if (typeof value !== 'function') return value
      const fn = value.bind(target)
      bound.set(prop, fn)
      return fn
    },
  })
}

async function timed<T>(
  observer: RelayObserver,
  op: 'publish' | 'ack',
  write: () => Promise<T>,
): Promise<T> {
  const start = performance.now()
  const result = await write()
  observer.storeWrite?.(op, (performance.now() - start) / 1000)
  return result
}

/**
 * `store` with publishes and acknowledgements timed (`storeWrite`). A lazy acknowledgement (a
 * WebSocket ack frame) waits for company on purpose and is not timed.
 */
export function timedStore(store: RelayStore, observer: RelayObserver): RelayStore {
  if (observer.storeWrite === undefined) return store
  return overlay(store, {
    publish: (input) => timed(observer, 'publish', () => store.publish(input)),
    ack: (mailbox, messageId, from, options) =>
      options?.lazy === true
        ? store.ack(mailbox, messageId, from, options)
        : timed(observer, 'ack', () => store.ack(mailbox, messageId, from, options)),
  })
}

/** `store` whose `retrieve` reports the entries it returned as deliveries of `mode`. */
export function deliveringStore(
  store: RelayStore,
  observer: RelayObserver | undefined,
  mode: DeliveryMode,
): RelayStore {
  if (observer?.delivered === undefined) return store
  return overlay(store, {
    retrieve: async (mailbox, options) => {
      const page = await store.retrieve(mailbox, options)
      if (page.entries.length > 0) observer.delivered?.(mode, page.entries.length)
      return page
    },
  })
}

/**
 * The relay's context as the endpoints of each delivery mode get it: the entries read for a
 * client there count as deliveries of that mode. `claimSse` claims a stream slot as SSE.
 */
export function deliveryContexts(
  ctx: RelayContext,
  observer: RelayObserver | undefined,
  claimSse: RelayContext['claimStream'],
): { retrieve: RelayContext; sse: RelayContext; wsFeed: FeedContext } {
  return {
    retrieve: { ...ctx, store: deliveringStore(ctx.store, observer, 'retrieve') },
    sse: {
      ...ctx,
      feed: { ...ctx.feed, store: deliveringStore(ctx.store, observer, 'sse') },
      claimStream: claimSse,
    },
    wsFeed: { ...ctx.feed, store: deliveringStore(ctx.store, observer, 'ws') },
  }
}
