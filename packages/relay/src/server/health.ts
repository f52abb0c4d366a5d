/**
 * `GET /healthz` (liveness: the process answers) and `GET /readyz` (readiness: the store can take
 * a write now and the relay is not draining), for load balancers and orchestrators (issue 14).
 *
 * Unauthenticated, so they tell a stranger nothing: `{"status":"ok"}` or 503
 * `{"status":"unavailable"}`, no error text, version or path. They are not charged to the
 * per-address limit (a load balancer probes from one address), so readiness is cheap whatever
 * the request rate: one store check at a time, its answer reused for `cacheMs`.
 */
import type { HttpReply } from '@agentmsg/core/http'
import type { RelayStore } from '../store/types.js'

export type HealthPath = 'healthz' | 'readyz'

/** `healthz` or `readyz` when `url` names one, at the root or below `basePath`. */
export function healthPath(url: string, basePath: string): HealthPath | undefined {
  // Most requests are not probes: a substring test before any parsing.
  if (!url.includes('/healthz') && !url.includes('/readyz')) return undefined
  const path = new URL(url).pathname
  const below =
    basePath !== '' && path.startsWith(`${basePath}/`) ? path.slice(basePath.length) : path
  if (below === '/healthz') return 'healthz'
  if (below === '/readyz') return 'readyz'
  return undefined
}

const HEADERS = { 'content-type': 'application/json', 'cache-control': 'no-store' }

/** The answer of a probe: 200 ok, 503 unavailable (with Retry-After), 405 for other methods. */
export function healthReply(ok: boolean, method: string): HttpReply {
  if (method !== 'GET' && method !== 'HEAD') {
    return { status: 405, headers: { ...HEADERS, allow: 'GET, HEAD' }, body: null }
  }
  const head = method === 'HEAD'
  if (ok) return { status: 200, headers: HEADERS, body: head ? null : '{"status":"ok"}' }
  return {
    status: 503,
    headers: { ...HEADERS, 'retry-after': '1' },
    body: head ? null : '{"status":"unavailable"}',
  }
}

export interface ReadinessOptions {
  /** True once the relay began to close (draining: not ready). */
  closing: () => boolean
  /** A check that takes longer counts as failed. @default 2000 */
  timeoutMs?: number
  /** How long a check's answer is reused. @default 1000 */
  cacheMs?: number
  now?: () => number
}

/**
 * The relay's readiness: not draining, and the store can take a write now
 * (`RelayStore.checkWritable`; a store without it is asked a read, `usage()`).
 */
export class Readiness {
  readonly #store: RelayStore
  readonly #closing: () => boolean
  readonly #timeoutMs: number
  readonly #cacheMs: number
  readonly #now: () => number
  #checking: Promise<boolean> | undefined
  #last: { ok: boolean; at: number } | undefined

  constructor(store: RelayStore, options: ReadinessOptions) {
    this.#store = store
    this.#closing = options.closing
    this.#timeoutMs = options.timeoutMs ?? 2000
    this.#cacheMs = options.cacheMs ?? 1000
    this.#now = options.now ?? Date.now
  }

  async ready(): Promise<boolean> {
    if (this.#closing()) return false
    const last = this.#last
    if (last !== undefined && this.#now() - last.at < this.#cacheMs) return last.ok
    this.#checking ??= this.#check().then((ok) => {
      this.#last = { ok, at: this.#now() }
      this.#checking = undefined
      return ok
    })
    const ok = await this.#checking
    return ok && !this.#closing()
  }

  async #check(): Promise<boolean> {
    const store = this.#store
    let timer: ReturnType<typeof setTimeout> | undefined
    const timeout = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), this.#timeoutMs)
      timer.unref?.()
    })
    const check = (async () => {
      if (store.checkWritable !== undefined) await store.checkWritable()
      else await store.usage()
      return true
    })().catch(() => false)
    try {
      return await Promise.race([check, timeout])
    } finally {
      clearTimeout(timer)
    }
  }
}
