import type { DeliveryTarget, JsonValue, Message, Storage } from '@agentmsg/core'

/** One pending delivery: a message, where it goes, and how its retries stand. */
export interface OutboxEntry {
  /** {@link Outbox.entryId} of the message id and target. */
  id: string
  message: Message
  target: DeliveryTarget
  /** When the first attempt started (ms since the epoch); the 24 h deadline counts from here. */
  firstAttempt: number
  /** Attempts made so far. */
  attempts: number
  /** When the next attempt is due (ms since the epoch). */
  nextAttempt: number
  /** Why the last attempt failed; `null` before the first one (storage holds no `undefined`). */
  lastError: string | null
}

/** The part of an entry that changes after every attempt. */
export type OutboxState = Pick<OutboxEntry, 'attempts' | 'nextAttempt' | 'lastError'>

/** Options of {@link Outbox}. */
export interface OutboxOptions {
  /** Key prefix in the storage. @default 'outbox/' */
  prefix?: string
}

const MESSAGE = '/m'
const STATE = '/s'

/**
 * Pending deliveries, kept in a core {@link Storage} so they survive a restart (with a
 * persistent adapter). Each entry is two keys: `<prefix><id>/m` holds what never changes (the
 * message, up to 1 MiB, and its target), `<prefix><id>/s` the retry state rewritten after
 * every attempt — so the dozens of attempts over 24 h do not rewrite the message each time.
 * Adding and removing an entry touch both keys in one atomic `batch`.
 *
 * @example
 * const outbox = new Outbox(storage)
 * for (const entry of await outbox.list()) schedule(entry)
 */
export class Outbox {
  readonly storage: Storage
  readonly prefix: string

  constructor(storage: Storage, options: OutboxOptions = {}) {
    this.storage = storage
    this.prefix = options.prefix ?? 'outbox/'
  }

  /**
   * The entry id of a message sent to a target: `<message_id>~<kind>~<encoded first url>`. A
   * message id cannot contain `~` or `/` (PROFILE §2) and the encoded URL holds no `/`, so ids
   * are unambiguous and make flat keys (and stay what earlier versions wrote).
   */
  static entryId(messageId: string, target: DeliveryTarget): string {
    return `${messageId}~${target.kind}~${encodeURIComponent(target.urls[0] ?? '')}`
  }

  /** Store a new entry (both keys at once), replacing one with the same id. */
  async add(entry: OutboxEntry): Promise<void> {
    const fixed: JsonValue = {
      id: entry.id,
      message: entry.message as unknown as JsonValue,
      target: targetValue(entry.target),
      firstAttempt: entry.firstAttempt,
    }
    await this.storage.batch([
      { type: 'put', key: this.#key(entry.id, MESSAGE), value: fixed },
      { type: 'put', key: this.#key(entry.id, STATE), value: stateValue(entry) },
    ])
  }

  /** Record the outcome of an attempt. */
  async update(id: string, state: OutboxState): Promise<void> {
    await this.storage.put(this.#key(id, STATE), stateValue(state))
  }

  /** Forget an entry (delivered, failed or undeliverable). Removing a missing one is fine. */
  async remove(id: string): Promise<void> {
    await this.storage.batch([
      { type: 'delete', key: this.#key(id, MESSAGE) },
      { type: 'delete', key: this.#key(id, STATE) },
    ])
  }

  /** One entry, or `undefined`. */
  async get(id: string): Promise<OutboxEntry | undefined> {
    const fixed = await this.storage.get(this.#key(id, MESSAGE))
    if (fixed === undefined) return undefined
    return toEntry(fixed, await this.storage.get(this.#key(id, STATE)))
  }

  /**
   * Every pending entry, in key order. Records that do not parse (written by something else)
   * are skipped, not thrown on, so one bad record cannot stop a resume.
   */
  async list(): Promise<OutboxEntry[]> {
    const rows = await this.storage.list(this.prefix)
    const fixed = new Map<string, JsonValue>()
    const states = new Map<string, JsonValue>()
    for (const [key, value] of rows) {
      const rest = key.slice(this.prefix.length)
      if (rest.endsWith(MESSAGE)) fixed.set(rest.slice(0, -MESSAGE.length), value)
      else if (rest.endsWith(STATE)) states.set(rest.slice(0, -STATE.length), value)
    }
    const out: OutboxEntry[] = []
    for (const [id, value] of fixed) {
      const entry = toEntry(value, states.get(id))
      if (entry && entry.id === id) out.push(entry)
    }
    return out
  }

  #key(id: string, suffix: string): string {
    return `${this.prefix}${id}${suffix}`
  }
}

function stateValue(s: OutboxState): JsonValue {
  return { attempts: s.attempts, nextAttempt: s.nextAttempt, lastError: s.lastError }
}

type Obj = Record<string, unknown>

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)
const isTime = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v)

function targetValue(t: DeliveryTarget): JsonValue {
  return {
    kind: t.kind,
    agent: t.agent,
    urls: [...t.urls],
    ...(t.preference !== undefined ? { preference: t.preference } : {}),
  }
}

/**
 * The stored target. A record of an earlier version holds `{kind: 'inbox', url}`: it is read
 * as the inbox target of the message's addressee.
 */
function toTarget(v: unknown, message: Obj): DeliveryTarget | undefined {
  if (!isObj(v) || typeof v.kind !== 'string') return undefined
  if (typeof v.agent === 'string' && Array.isArray(v.urls)) {
    if (!v.urls.every((u): u is string => typeof u === 'string')) return undefined
    const target: DeliveryTarget = { kind: v.kind, agent: v.agent, urls: v.urls }
    if (v.preference === 'any' || v.preference === 'ordered') target.preference = v.preference
    return target
  }
  if (v.kind === 'inbox' && typeof v.url === 'string') {
    const agent = addressee(message)
    return agent === undefined ? undefined : { kind: 'inbox', agent, urls: [v.url] }
  }
  return undefined
}

/** `to.agent`, or for a topic message its publisher (as DeliveryTarget.agent says). */
function addressee(message: Obj): string | undefined {
  const to = isObj(message.to) ? message.to.agent : undefined
  if (typeof to === 'string') return to
  const from = isObj(message.from) ? message.from.agent : undefined
  return typeof from === 'string' ? from : undefined
}

function toEntry(fixed: unknown, state: unknown): OutboxEntry | undefined {
  if (!isObj(fixed) || typeof fixed.id !== 'string' || !isTime(fixed.firstAttempt)) return undefined
  if (!isObj(fixed.message) || typeof fixed.message.message_id !== 'string') return undefined
  const target = toTarget(fixed.target, fixed.message)
  if (!target) return undefined
  // No state record (cannot happen through this class): treat as never attempted.
  const s = isObj(state) ? state : {}
  return {
    id: fixed.id,
    message: fixed.message as unknown as Message,
    target,
    firstAttempt: fixed.firstAttempt,
    attempts:
      Number.isInteger(s.attempts) && (s.attempts as number) >= 0 ? (s.attempts as number) : 0,
    nextAttempt: isTime(s.nextAttempt) ? s.nextAttempt : fixed.firstAttempt,
    lastError: typeof s.lastError === 'string' ? s.lastError : null,
  }
}
