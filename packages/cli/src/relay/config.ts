/**
 * `agentmsg relay --config FILE`: the relay's limits and quotas (PROFILE §6 and §9) in a JSON
 * file, checked at start. Every unknown key and every bad value is one problem, reported on a
 * line of its own (`limits.perSender.rate: must be a positive number or "unlimited"`), so an
 * operator fixes them all in one go. Flags given on the command line override the file.
 *
 * The file's shape is a table ({@link SHAPE}): each leaf parses one value.
 */
import { readFile } from 'node:fs/promises'
import { PROFILE } from '@agentmsg/core'
import { AddressSet } from '@agentmsg/core/receive'
import type { RelayLimits, RelayQuota } from '@agentmsg/relay'

/** What a config file sets, as serveRelay options. */
export interface RelayConfig {
  limits?: RelayLimits
  quota?: RelayQuota
  retentionMs?: number
  mailboxFullRetryAfter?: number
  headersTimeoutMs?: number
  bodyTimeoutMs?: number
  trustedProxies?: string[]
}

/** A config file that cannot be used: one problem per line, `<path>: <what is wrong>`. */
export class RelayConfigError extends Error {
  constructor(
    readonly file: string,
    readonly problems: string[],
  ) {
    super(`${file}: ${problems.join('; ')}`)
  }
}

type Parsed = { value: unknown } | { problem: string }
type Leaf = (value: unknown) => Parsed
interface Shape {
  [key: string]: Leaf | Shape
}

const MAX_COUNT = 1_000_000_000
const SIZE_UNITS: Record<string, number> = { '': 1, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3 }

/** Bytes: a whole number, or one with a KiB, MiB or GiB suffix; undefined when not a size. */
export function parseSize(text: string): number | undefined {
  const match = /^([0-9]{1,15})(KiB|MiB|GiB)?$/.exec(text.trim())
  return match ? Number(match[1]) * SIZE_UNITS[match[2] ?? '']! : undefined
}

const whole: Leaf = (v) =>
  Number.isInteger(v) && (v as number) >= 1 && (v as number) <= MAX_COUNT
    ? { value: v }
    : { problem: 'must be a positive whole number' }

const rate: Leaf = (v) => {
  if (v === 'unlimited') return { value: Number.POSITIVE_INFINITY }
  return typeof v === 'number' && Number.isFinite(v) && v > 0
    ? { value: v }
    : { problem: 'must be a positive number or "unlimited"' }
}

const size: Leaf = (v) => {
  const bytes =
    typeof v === 'string' ? parseSize(v) : Number.isSafeInteger(v) ? (v as number) : undefined
  return bytes !== undefined && bytes >= 1
    ? { value: bytes }
    : { problem: 'must be a positive number of bytes, or a size such as "256MiB" (KiB, MiB, GiB)' }
}

const seconds: Leaf = (v) =>
  typeof v === 'number' && Number.isFinite(v) && v > 0 && v <= 86_400
    ? { value: v * 1000 }
    : { problem: 'must be a positive number of seconds (at most 86400)' }

const DAY = 86_400_000
// PROFILE §9: a message is kept 7 days at least.
const MIN_DAYS = PROFILE.relayRetentionMs / DAY
const retentionDays: Leaf = (v) =>
  typeof v === 'number' && Number.isFinite(v) && v >= MIN_DAYS && v <= 3650
    ? { value: v * DAY }
    : { problem: `must be a number of days from ${MIN_DAYS} (PROFILE §9) to 3650` }

const rateLimit: Shape = { rate, burst: whole }

// Load balancers and proxies whose X-Forwarded-For is believed (PROFILE §6).
const trustedProxies: Leaf = (v) => {
  if (!Array.isArray(v) || v.length > 1000 || !v.every((e) => typeof e === 'string')) {
    return { problem: 'must be an array of IP addresses or CIDR ranges' }
  }
  try {
    new AddressSet(v)
  } catch (e) {
    return { problem: (e as Error).message }
  }
  return { value: v }
}

/** The config file: every key it may hold. */
const SHAPE: Shape = {
  limits: {
    perAddress: rateLimit,
    perSender: rateLimit,
    maxReadsPerAddress: whole,
    maxConcurrentReads: whole,
    maxTrackedKeys: whole,
    streamsPerAgent: whole,
    subscriptionsPerAgent: whole,
  },
  quota: {
    messages: whole,
    bytes: size,
    senderMessages: whole,
    senderBytes: size,
    totalBytes: size,
  },
  timeouts: { headersSeconds: seconds, bodySeconds: seconds },
  retentionDays,
  mailboxFullRetryAfter: whole,
  trustedProxies,
}

/** Parse `value` against `shape`, pushing one problem per bad key; returns what parsed. */
function walk(
  value: unknown,
  shape: Shape,
  path: string,
  problems: string[],
): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    problems.push(path ? `${path}: must be a JSON object` : 'must be a JSON object')
    return out
  }
  for (const [key, item] of Object.entries(value)) {
    const at = path ? `${path}.${key}` : key
    const rule = Object.hasOwn(shape, key) ? shape[key] : undefined
    if (rule === undefined) {
      problems.push(`${at}: unknown key (expected one of ${Object.keys(shape).join(', ')})`)
    } else if (typeof rule === 'function') {
      const parsed = rule(item)
      if ('problem' in parsed) problems.push(`${at}: ${parsed.problem}`)
      else out[key] = parsed.value
    } else {
      out[key] = walk(item, rule, at, problems)
    }
  }
  return out
}

interface ParsedRate {
  rate?: number
  burst?: number
}

/** What {@link SHAPE} parses a valid file into (values converted: ms, bytes, Infinity). */
interface ParsedFile {
  limits?: Omit<RelayLimits, 'perAddress' | 'perSender'> & {
    perAddress?: ParsedRate
    perSender?: ParsedRate
  }
  quota?: RelayQuota
  timeouts?: { headersSeconds?: number; bodySeconds?: number }
  retentionDays?: number
  mailboxFullRetryAfter?: number
  trustedProxies?: string[]
}

function rateLimitOf(given: ParsedRate | undefined): RelayLimits['perSender'] {
  if (given === undefined) return undefined
  return {
    ...(given.rate !== undefined ? { perMinute: given.rate } : {}),
    ...(given.burst !== undefined ? { burst: given.burst } : {}),
  }
}

/** Check a parsed config file; throws {@link RelayConfigError} with every problem found. */
export function relayConfigFrom(file: string, json: unknown): RelayConfig {
  const problems: string[] = []
  const parsed = walk(json, SHAPE, '', problems) as ParsedFile
  if (problems.length > 0) throw new RelayConfigError(file, problems)
  const config: RelayConfig = {}
  if (parsed.limits !== undefined) {
    const { perAddress, perSender, ...rest } = parsed.limits
    const limits: RelayLimits = { ...rest }
    const address = rateLimitOf(perAddress)
    const sender = rateLimitOf(perSender)
    if (address) limits.perAddress = address
    if (sender) limits.perSender = sender
    config.limits = limits
  }
  if (parsed.quota !== undefined) config.quota = parsed.quota
  const { headersSeconds, bodySeconds } = parsed.timeouts ?? {}
  // `seconds` converted them to ms already.
  if (headersSeconds !== undefined) config.headersTimeoutMs = headersSeconds
  if (bodySeconds !== undefined) config.bodyTimeoutMs = bodySeconds
  if (parsed.retentionDays !== undefined) config.retentionMs = parsed.retentionDays
  if (parsed.mailboxFullRetryAfter !== undefined) {
    config.mailboxFullRetryAfter = parsed.mailboxFullRetryAfter
  }
  if (parsed.trustedProxies !== undefined) config.trustedProxies = parsed.trustedProxies
  return config
}

/** Read and check a config file (JSON, at most 1 MiB). */
export async function loadRelayConfig(file: string): Promise<RelayConfig> {
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (e) {
    throw new RelayConfigError(file, [`cannot be read: ${(e as Error).message}`])
  }
  if (text.length > 1_048_576) throw new RelayConfigError(file, ['is larger than 1 MiB'])
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (e) {
    throw new RelayConfigError(file, [`is not JSON: ${(e as Error).message}`])
  }
  return relayConfigFrom(file, json)
}

/** `file` under `flags`: a value given by a flag wins over the file's. */
export function mergeLimits(
  file: RelayLimits | undefined,
  flags: RelayLimits | undefined,
): RelayLimits | undefined {
  if (file === undefined || flags === undefined) return flags ?? file
  const merged: RelayLimits = { ...file, ...flags }
  const fromFile = (k: 'perAddress' | 'perSender') => file[k] !== false && file[k] !== undefined
  if (fromFile('perAddress') && flags.perAddress !== undefined && flags.perAddress !== false) {
    merged.perAddress = { ...(file.perAddress as object), ...flags.perAddress }
  }
  if (fromFile('perSender') && flags.perSender !== undefined) {
    merged.perSender = { ...file.perSender, ...flags.perSender }
  }
  return merged
}
