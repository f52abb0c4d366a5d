import { AgentMsgError, invalidFormat } from './errors.js'
import type { Storage, StorageOp } from './interfaces/storage.js'
import { memoryStorage } from './storage/memory.js'
import { type AuthLevel, isObject, type SignatureAlg } from './types.js'

/** Where a verifying key came from, which decides the level (PROFILE §5). */
export type KeySource =
  | 'shared-secret'
  | 'introduction'
  | 'identity-document'
  | 'pinned'
  | 'did-key'

const LEVELS: Record<KeySource, AuthLevel> = {
  'shared-secret': 0,
  introduction: 1,
  'identity-document': 2,
  pinned: 2,
  'did-key': 3,
}

/** The authentication level of a signature whose key came from `source` (PROFILE §5). */
export function levelForKeySource(source: KeySource): AuthLevel {
  const level = Object.hasOwn(LEVELS, source) ? LEVELS[source] : undefined
  if (level === undefined) throw new TypeError(`unknown key source ${JSON.stringify(source)}`)
  return level
}

/** How a peer became a known contact (PROFILE §5). */
export type ContactSource = 'pinned' | 'introduced' | 'accepted'

/** A known contact as stored; `since`: when it was (last) marked, epoch ms. */
export interface KnownContact {
  how: ContactSource
  since: number
}

/** What {@link AuthLevelTracker.evaluate} needs to know about one verified message. */
export interface AuthLevelInput {
  from: string
  conversationId: string
  /** Only a `greeting` can renegotiate. */
  phase: string
  /** The message's `auth_level`: only a lower one, in a greeting, renegotiates. */
  requestedLevel?: number
  level: AuthLevel
  algs: SignatureAlg[]
}

/** The outcome of {@link AuthLevelTracker.evaluate} for an admissible message. */
export interface AuthDecision {
  from: string
  conversationId: string
  /** `null` for a new conversation. */
  previousLevel: AuthLevel | null
  level: AuthLevel
  messageLevel: AuthLevel
  renegotiated: boolean
  /** The message raised the level above where the conversation was (or would have started). */
  escalated: boolean
  peerFloor: AuthLevel
}

interface ConversationRecord {
  level: AuthLevel
  /** The level of the greeting that renegotiated down: lets HMAC back in above the floor. */
  renegotiatedBy?: AuthLevel
}

const CONV = 'auth/conv/'
const FLOOR = 'auth/floor/'
const CONTACT = 'auth/contact/'
const CONTACT_SOURCES: ReadonlySet<unknown> = new Set(['pinned', 'introduced', 'accepted'])

/**
 * Authentication levels (PROFILE §5), per conversation and per peer, in a {@link Storage}: a
 * conversation keeps the highest level it reached unless a greeting renegotiates it down; a peer
 * verified at ≥ 2 starts new conversations there (its floor), so a leaked introduction token
 * cannot open a weaker one; known contacts are kept apart from levels.
 */
export class AuthLevelTracker {
  readonly #storage: Storage
  readonly #now: () => number
  // Serialises read-modify-write of the stored state, so concurrent commits cannot lower a level.
  #queue: Promise<unknown> = Promise.resolve()

  constructor(options: { storage?: Storage; now?: () => number } = {}) {
    this.#storage = options.storage ?? memoryStorage()
    this.#now = options.now ?? Date.now
  }

  /** Whether a verified message may be admitted at its level; changes nothing. */
  async evaluate(input: AuthLevelInput): Promise<AuthDecision> {
    const { from, conversationId, phase, requestedLevel, level, algs } = input
    if (!isLevel(level)) throw new TypeError('AuthLevelTracker: level must be 0, 1, 2 or 3')
    if (!Array.isArray(algs)) throw new TypeError('AuthLevelTracker: algs must be an array')
    if (requestedLevel !== undefined && !isLevel(requestedLevel)) {
      throw invalidFormat('must be an integer 0–3', 'auth_level')
    }
    const conversation = await this.#conversation(from, conversationId)
    const floor = await this.peerFloor(from)
    const current = conversation?.level ?? null
    // The floor applies to new conversations; an existing one keeps its level (PROFILE §5).
    const baseline = current ?? floor
    const decision = (to: AuthLevel, renegotiated: boolean): AuthDecision => ({
      from,
      conversationId,
      previousLevel: current,
      level: to,
      messageLevel: level,
      renegotiated,
      escalated: to > baseline,
      peerFloor: level >= 2 && level > floor ? level : floor,
    })
    const lower = phase === 'greeting' && requestedLevel !== undefined && requestedLevel < baseline
    if (lower && level >= baseline) return decision(requestedLevel as AuthLevel, true)
    // Nothing but HMAC verified (an empty list too: nothing stronger vouched).
    if (floor >= 2 && algs.every((alg) => alg === 'hmac-sha256')) {
      const renegotiatedToZero =
        conversation !== undefined &&
        conversation.level <= 0 &&
        (conversation.renegotiatedBy ?? -1) >= floor
      if (!renegotiatedToZero) {
        throw insufficient(
          `${from} has been verified at auth level ${floor}; messages signed only with ` +
            `hmac-sha256 (an introduction token, level 0) are refused unless the conversation ` +
            `is first renegotiated down by a greeting verified at level ≥ ${floor}`,
        )
      }
    }
    if (level < baseline) {
      const where =
        current === null
          ? `a new conversation with ${from} starts at its peer floor, auth level ${floor}`
          : `conversation ${conversationId} with ${from} is at auth level ${current}`
      throw insufficient(
        `${where}, but this message is verified only at level ${level}; sign it with a key of ` +
          `level ≥ ${baseline}, or renegotiate with a greeting carrying auth_level < ${baseline} ` +
          `verified at level ≥ ${baseline}`,
      )
    }
    return decision(level, false)
  }

  /** Record an accepted message's decision; racing commits keep the highest level. */
  async commit(decision: AuthDecision): Promise<void> {
    await this.#exclusive(() => this.#commit(decision))
  }

  /** {@link evaluate} then {@link commit}, as one step against concurrent admissions. */
  async admit(input: AuthLevelInput): Promise<AuthDecision> {
    return this.#exclusive(async () => {
      const decision = await this.evaluate(input)
      await this.#commit(decision)
      return decision
    })
  }

  /** The conversation's level, or `null` when no message of it was committed. */
  async conversationLevel(from: string, conversationId: string): Promise<AuthLevel | null> {
    return (await this.#conversation(from, conversationId))?.level ?? null
  }

  /** The level new conversations with `agent` start at: its highest level ≥ 2 seen, else 0. */
  async peerFloor(agent: string): Promise<AuthLevel> {
    const value = await this.#storage.get(FLOOR + encodeURIComponent(agent))
    return isLevel(value) ? value : 0
  }

  /** Record that the application knows `agent` (PROFILE §5 "known contact"). */
  async markKnownContact(agent: string, how: ContactSource): Promise<void> {
    if (!CONTACT_SOURCES.has(how)) {
      throw new TypeError(`AuthLevelTracker: unknown contact source ${JSON.stringify(how)}`)
    }
    await this.#storage.put(CONTACT + encodeURIComponent(agent), { how, since: this.#now() })
  }

  /** Whether `agent` was marked a known contact. */
  async isKnownContact(agent: string): Promise<boolean> {
    return (await this.knownContact(agent)) !== undefined
  }

  /** How and since when `agent` is a known contact, if it is. */
  async knownContact(agent: string): Promise<KnownContact | undefined> {
    const value = await this.#storage.get(CONTACT + encodeURIComponent(agent))
    if (!isObject(value)) return undefined
    const { how, since } = value
    return CONTACT_SOURCES.has(how) && typeof since === 'number'
      ? { how: how as ContactSource, since }
      : undefined
  }

  /** Forget a known contact; its levels and floor stay (they guard against a leaked token). */
  async forgetContact(agent: string): Promise<void> {
    await this.#storage.delete(CONTACT + encodeURIComponent(agent))
  }

  async #commit(d: AuthDecision): Promise<void> {
    const stored = await this.#conversation(d.from, d.conversationId)
    const key = convKey(d.from, d.conversationId)
    const ops: StorageOp[] = []
    if (d.renegotiated) {
      ops.push({ type: 'put', key, value: { level: d.level, renegotiatedBy: d.messageLevel } })
    } else if (stored === undefined || d.level > stored.level) {
      ops.push({ type: 'put', key, value: { level: d.level } })
    }
    if (d.peerFloor > (await this.peerFloor(d.from))) {
      ops.push({ type: 'put', key: FLOOR + encodeURIComponent(d.from), value: d.peerFloor })
    }
    // One batch, so a crash cannot leave a raised floor without the level that raised it.
    if (ops.length > 0) await this.#storage.batch(ops)
  }

  async #conversation(
    from: string,
    conversationId: string,
  ): Promise<ConversationRecord | undefined> {
    const value = await this.#storage.get(convKey(from, conversationId))
    if (!isObject(value) || !isLevel(value.level)) return undefined
    const record: ConversationRecord = { level: value.level }
    if (isLevel(value.renegotiatedBy)) record.renegotiatedBy = value.renegotiatedBy
    return record
  }

  #exclusive<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(task)
    // The queue goes on after a failure; the failure goes to this task's caller only.
    this.#queue = run.catch(() => undefined)
    return run
  }
}

const insufficient = (text: string) =>
  new AgentMsgError('insufficient_auth_level', text, { field: 'security.signatures' })

const convKey = (from: string, conversationId: string) =>
  `${CONV}${encodeURIComponent(from)}/${encodeURIComponent(conversationId)}`

function isLevel(value: unknown): value is AuthLevel {
  return value === 0 || value === 1 || value === 2 || value === 3
}
