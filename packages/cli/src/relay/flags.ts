/**
 * Flags of `agentmsg relay` beyond what `parseArgs` checks: the rate limits (PROFILE §6, so an
 * operator raises them for a load test or a busy deployment without code), the operations
 * flags, the PostgreSQL store, PEM files, sizes and trusted proxies.
 */
import { readFile } from 'node:fs/promises'
import { AddressSet } from '@agentmsg/core/receive'
import { RELAY_LOG_LEVELS, type RelayLimits } from '@agentmsg/relay'
import { parseSize as sizeOf } from './config.js'
import { RelayCommandError, usage } from './usage.js'

/** The `parseArgs` options of the limit and operations flags. */
export const EXTRA_FLAGS = {
  'rate-limit': { type: 'string' },
  burst: { type: 'string' },
  'sender-rate-limit': { type: 'string' },
  'sender-burst': { type: 'string' },
  'max-reads-per-address': { type: 'string' },
  'streams-per-agent': { type: 'string' },
  config: { type: 'string' },
  'metrics-port': { type: 'string' },
  'metrics-host': { type: 'string' },
  'log-level': { type: 'string' },
  'shutdown-timeout': { type: 'string' },
} as const

type Values = Partial<Record<keyof typeof EXTRA_FLAGS, string>>

/** A positive whole number of a flag, or Infinity for "unlimited" when allowed. */
function count(flag: string, text: string, unlimited: boolean): number {
  if (unlimited && text === 'unlimited') return Number.POSITIVE_INFINITY
  if (!/^[0-9]{1,9}$/.test(text) || Number(text) < 1) {
    const or = unlimited ? ' or "unlimited"' : ''
    throw usage(`--${flag} ${text} is not a positive whole number${or}`)
  }
  return Number(text)
}

/** The limits the flags ask for, or undefined when none was given (the defaults apply). */
export function limitsFromFlags(values: Values): RelayLimits | undefined {
  const limits: RelayLimits = {}
  const rate = (flag: keyof typeof EXTRA_FLAGS, unlimited: boolean) => {
    const text = values[flag]
    return text === undefined ? undefined : count(flag, text.trim(), unlimited)
  }
  const pair = (perMinute: number | undefined, burst: number | undefined) =>
    perMinute === undefined && burst === undefined
      ? undefined
      : { ...(perMinute !== undefined && { perMinute }), ...(burst !== undefined && { burst }) }
  const perAddress = pair(rate('rate-limit', true), rate('burst', false))
  if (perAddress) limits.perAddress = perAddress
  const perSender = pair(rate('sender-rate-limit', true), rate('sender-burst', false))
  if (perSender) limits.perSender = perSender
  const reads = rate('max-reads-per-address', false)
  if (reads !== undefined) limits.maxReadsPerAddress = reads
  const streams = rate('streams-per-agent', false)
  if (streams !== undefined) limits.streamsPerAgent = streams
  return Object.keys(limits).length > 0 ? limits : undefined
}

export interface OpsFlags {
  configFile?: string
  metrics?: { port: number; host: string }
  logLevel: string
  shutdownTimeoutMs: number
}

export function opsFromFlags(values: Values): OpsFlags {
  const ops: OpsFlags = { logLevel: values['log-level'] ?? 'info', shutdownTimeoutMs: 10_000 }
  if (!RELAY_LOG_LEVELS.includes(ops.logLevel)) {
    throw usage(`--log-level ${ops.logLevel}: one of ${RELAY_LOG_LEVELS.join(', ')}`)
  }
  if (values.config !== undefined) ops.configFile = values.config
  const port = values['metrics-port']
  const host = values['metrics-host']
  if (port !== undefined) {
    const n = /^[0-9]{1,5}$/.test(port) ? Number(port) : -1
    if (!(n >= 0 && n <= 65535)) throw usage(`--metrics-port ${port} is not a port`)
    ops.metrics = { port: n, host: host ?? '127.0.0.1' }
  } else if (host !== undefined) {
    throw usage('--metrics-host needs --metrics-port P')
  }
  const timeout = values['shutdown-timeout']
  if (timeout !== undefined) {
    const seconds = /^[0-9]{1,4}(\.[0-9]{1,3})?$/.test(timeout) ? Number(timeout) : 0
    if (!(seconds > 0)) {
      throw usage(`--shutdown-timeout ${timeout} is not a positive number of seconds`)
    }
    ops.shutdownTimeoutMs = seconds * 1000
  }
  return ops
}

/** Where a relay keeps its mailboxes when not in SQLite. */
export interface PostgresStoreFlags {
  url: string
  schema?: string
}

/** `--store postgres://…` / `--store-schema`; undefined when no `--store` was given. */
export function storeFromFlags(
  url: string | undefined,
  schema: string | undefined,
): PostgresStoreFlags | undefined {
  if (url === undefined) {
    if (schema !== undefined) throw usage('--store-schema needs --store postgres://…')
    return undefined
  }
  let protocol: string | undefined
  try {
    protocol = new URL(url).protocol
  } catch {}
  if (protocol !== 'postgres:' && protocol !== 'postgresql:') {
    throw usage('--store needs a postgres:// or postgresql:// URL')
  }
  if (schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
    throw usage(`--store-schema ${schema}: lower-case letters, digits and _ (at most 63)`)
  }
  return { url, ...(schema !== undefined ? { schema } : {}) }
}

/** The store as it may be logged: host, port and database, never the user or password. */
export function describeStore(flags: PostgresStoreFlags): string {
  const url = new URL(flags.url)
  const where = `${url.hostname}${url.port ? `:${url.port}` : ''}${url.pathname}`
  return `PostgreSQL ${where} (schema ${flags.schema ?? 'agentmsg_relay'})`
}

/** Read a PEM file named by a flag (exit 2 when it cannot be read or is not PEM). */
export async function readPem(flag: string, file: string, marker: string): Promise<string> {
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (e) {
    const why = (e as Error).message
    throw new RelayCommandError('invalid_input', `${flag} ${file}: ${why} — pass a PEM file`)
  }
  if (text.length > 1_048_576 || !text.includes(marker)) {
    throw new RelayCommandError('invalid_input', `${flag} ${file}: not a PEM file with ${marker}`)
  }
  return text
}

/** `--max-storage`: bytes, or with a KiB, MiB or GiB suffix. */
export function parseSize(text: string): number {
  const bytes = sizeOf(text)
  if (bytes === undefined) {
    throw usage(`--max-storage ${text} is not a size (bytes, KiB, MiB or GiB)`)
  }
  return bytes
}

/**
 * `--trusted-proxies` (the flag wins over the config file's `trustedProxies`): the proxies whose
 * `X-Forwarded-For` the per-address limits believe (PROFILE §6).
 */
export function trustedProxiesFrom(
  flag: string[] | undefined,
  file: string[] | undefined,
): string[] | undefined {
  if (flag === undefined) return file
  const list = flag
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter(Boolean)
  try {
    new AddressSet(list)
  } catch (e) {
    throw usage(`--trusted-proxies: ${(e as Error).message}`)
  }
  return list
}
