/**
 * `GET /healthz` (the process answers) and `/readyz` (the store takes writes, not draining).
 * Unauthenticated, so they tell nothing (no error text or version); not rate limited (a load
 * balancer probes from one address), so one store check at a time, reused for `cacheMs`.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import type { HttpReply } from '@agentmsg/core/server'
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

/** `read()`, or undefined when it failed or took longer than `ms`. */
export async function within<T>(ms: number, read: () => Promise<T>): Promise<T | undefined> {
  const done = new AbortController()
  const late = sleep(ms, undefined, { ref: false, signal: done.signal }).catch(() => undefined)
  return Promise.race([read().catch(() => undefined), late]).finally(() => done.abort())
}

/** Ready: not `closing`, and the store can write now (`checkWritable`, else `usage()`) in time. */
export function readiness(
  store: RelayStore,
  closing: () => boolean,
  { timeoutMs = 2000, cacheMs = 1000 }: { timeoutMs?: number; cacheMs?: number } = {},
): () => Promise<boolean> {
  let checking: Promise<boolean> | undefined
  let last: { ok: boolean; at: number } | undefined
  const check = () => (store.checkWritable?.() ?? store.usage()).then(() => true)
  return async () => {
    if (closing()) return false
    if (last !== undefined && Date.now() - last.at < cacheMs) return last.ok
    checking ??= within(timeoutMs, check).then((ok = false) => {
      last = { ok, at: Date.now() }
      checking = undefined
      return ok
    })
    return (await checking) && !closing()
  }
}
