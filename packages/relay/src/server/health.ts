/**
 * `GET /healthz` (liveness: the process answers) and `GET /readyz` (readiness: the store can
 * take a write now and the relay is not draining), for load balancers and orchestrators.
 * Unauthenticated, so they tell a stranger nothing: no error text, version or path. Not charged
 * to the per-address limit (a load balancer probes from one address), so readiness stays cheap
 * whatever the probe rate: one store check at a time, its answer reused for `cacheMs`.
 */
import type { HttpReply } from '@agentmsg/core/receive'
import type { RelayStore } from '../store/types.js'

export type HealthPath = 'healthz' | 'readyz'

/** `healthz` or `readyz` when `url` names one, at the root or below `basePath`. */
export function healthPath(url: string, basePath: string): HealthPath | undefined {
  // Most requests are not probes: a substring test before any parsing.
  if (!url.includes('/healthz') && !url.includes('/readyz')) return undefined
  const path = new URL(url).pathname
  const below =
    basePath !== '' && path.startsWith(`${basePath}/`) ? path.slice(basePath.length) : path
  return below === '/healthz' ? 'healthz' : below === '/readyz' ? 'readyz' : undefined
}

/** 200 ok, 503 unavailable (with Retry-After), 405 for other methods than GET and HEAD. */
export function healthReply(ok: boolean, method: string): HttpReply {
  const headers = { 'content-type': 'application/json', 'cache-control': 'no-store' }
  if (method !== 'GET' && method !== 'HEAD') {
    return { status: 405, headers: { ...headers, allow: 'GET, HEAD' }, body: null }
  }
  const body = (text: string) => (method === 'HEAD' ? null : text)
  if (ok) return { status: 200, headers, body: body('{"status":"ok"}') }
  const retry = { ...headers, 'retry-after': '1' }
  return { status: 503, headers: retry, body: body('{"status":"unavailable"}') }
}

/**
 * The relay's readiness: not `closing`, and the store can take a write now
 * (`RelayStore.checkWritable`, or a read, `usage()`, for a store without it); a check slower
 * than `timeoutMs` fails.
 */
export function readiness(
  store: RelayStore,
  closing: () => boolean,
  { timeoutMs = 2000, cacheMs = 1000 }: { timeoutMs?: number; cacheMs?: number } = {},
): () => Promise<boolean> {
  let checking: Promise<boolean> | undefined
  let last: { ok: boolean; at: number } | undefined
  const check = async () => {
    let timer: ReturnType<typeof setTimeout> | undefined
    const late = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs)
      timer.unref?.()
    })
    const write = (store.checkWritable?.() ?? store.usage()).then(() => true)
    try {
      return await Promise.race([write.catch(() => false), late])
    } finally {
      clearTimeout(timer)
    }
  }
  return async () => {
    if (closing()) return false
    if (last !== undefined && Date.now() - last.at < cacheMs) return last.ok
    checking ??= check().then((ok) => {
      last = { ok, at: Date.now() }
      checking = undefined
      return ok
    })
    return (await checking) && !closing()
  }
}
