/**
 * The relay's store as its observer sees it: writes timed from request to durable commit, and
 * the entries a feed or a retrieve read counted as deliveries of one mode. Wrappers, so the
 * endpoints and the stores stay as they are; without an observer the store is used directly.
 */
import { performance } from 'node:perf_hooks'
import type { RelayStore } from '../store/types.js'
import type { RelayContext } from './context.js'
import type { FeedContext } from './feed.js'
import type { DeliveryMode, RelayObserver } from './types.js'

/** `store` with some methods replaced, the others its own bound to it (it may have private fields). */
function overlay(store: RelayStore, replaced: Partial<RelayStore>): RelayStore {
  return new Proxy(store, {
    get(target, prop) {
      if (Object.hasOwn(replaced, prop)) return replaced[prop as keyof RelayStore]
      const value: unknown = Reflect.get(target, prop, target)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}

/** Publishes and acknowledgements timed; a lazy ack (a WebSocket frame) waits on purpose: untimed. */
export function timedStore(store: RelayStore, observer: RelayObserver): RelayStore {
  if (observer.storeWrite === undefined) return store
  const timed = async <T>(op: 'publish' | 'ack', write: Promise<T>) => {
    const start = performance.now()
    const result = await write
    observer.storeWrite?.(op, (performance.now() - start) / 1000)
    return result
  }
  return overlay(store, {
    publish: (input) => timed('publish', store.publish(input)),
    ack: (mailbox, id, from, options) =>
      options?.lazy === true
        ? store.ack(mailbox, id, from, options)
        : timed('ack', store.ack(mailbox, id, from, options)),
  })
}

function delivering(store: RelayStore, observer: RelayObserver | undefined, mode: DeliveryMode) {
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
 * The relay's context as the endpoints of each delivery mode get it: the entries read there
 * count as deliveries of that mode. `claimSse` claims a stream slot as SSE.
 */
export function deliveryContexts(
  ctx: RelayContext,
  observer: RelayObserver | undefined,
  claimSse: RelayContext['claimStream'],
): { retrieve: RelayContext; sse: RelayContext; wsFeed: FeedContext } {
  const feed = (mode: DeliveryMode) => ({
    ...ctx.feed,
    store: delivering(ctx.store, observer, mode),
  })
  return {
    retrieve: { ...ctx, store: delivering(ctx.store, observer, 'retrieve') },
    sse: { ...ctx, feed: feed('sse'), claimStream: claimSse },
    wsFeed: feed('ws'),
  }
}
