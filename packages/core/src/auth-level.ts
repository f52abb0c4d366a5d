import { AgentMsgError, invalidFormat } from './errors.js'
import type { Storage } from './interfaces/storage.js'
import { memoryStorage } from './storage/memory.js'
import type { AuthLevel, JsonValue, SignatureAlg } from './types.js'

/**
 * Where a verifying key came from; decides the signature's level (PROFILE §5):
 * - `shared-secret`: an HMAC introduction token → 0
 * - `introduction`: an Ed25519 key learned in an introduction, trust on first use → 1
 * - `identity-document`: from the agent's identity document over https → 2
 * - `pinned`: pinned after out-of-band confirmation → 2
 * - `did-key`: bound to the identifier itself (did:key) → 3
 */
export type KeySource =
  | 'shared-secret'
  | 'introduction'
  | 'identity-document'
  | 'pinned'
  | 'did-key'

/**
 * The authentication level of a signature whose key came from `source` (PROFILE §5's table).
 *
 * @example
 * levelForKeySource('identity-document') // 2
 */
export function levelForKeySource(source: KeySource): AuthLevel {
  switch (source) {
    case 'shared-secret':
      return 0
    case 'introduction':
      return 1
    case 'identity-document':
    case 'pinned':
      return 2
    case 'did-key':
      return 3
    default:
      throw new TypeError(`unknown key source ${JSON.stringify(source satisfies never)}`)
  }
}

/** How a peer became a known contact (PROFILE §5). */
export type ContactSource = 'pinned' | 'introduced' | 'accepted'

/** A known contact as stored. */
export interface KnownContact {
  how: ContactSource
  /** When it was (last) marked, epoch ms. */
  since: number
}

/** What {@link AuthLevelTracker.evaluate} needs to know about one verified message. */
export interface AuthLevelInput {
  /** `from.agent`. */
  from: string
  /** `conversation_id`. */
  conversationId: string
  /** `phase`; only a `greeting` can renegotiate. */
  phase: string
  /**
   * The message's `auth_level`, the level the sender asks for. It matters only for
   * renegotiation: a greeting asking for less than the conversation's level, verified at ≥ that
   * level, lowers it. Otherwise it is ignored: asking for more does not escalate (only a
   * signature at a higher level does), and asking for less in any other message does not lower.
   */
  requestedLevel?: number
  /** The highest level among the message's verified signatures. */
  level: AuthLevel
  /** The algorithms of the signatures that verified. */
  algs: SignatureAlg[]
}

/** The outcome of {@link AuthLevelTracker.evaluate} for an admissible message. */
export interface AuthDecision {
  from: string
  conversationId: string
  /** The conversation's level before this message; `null` for a new conversation. */
  previousLevel: AuthLevel | null
  /** The conversation's level after this message. */
  level: AuthLevel
  /** The level the message was verified at. */
  messageLevel: AuthLevel
  /** A greeting lowered the level explicitly. */
  renegotiated: boolean
  /** The message raised the level above where the conversation was (or would have started). */
  escalated: boolean
  /** The peer's floor after this message. */
  peerFloor: AuthLevel
}

/** Options for {@link AuthLevelTracker}. */
export interface AuthLevelTrackerOptions {
  /** Where levels and contacts are kept; persistent storage keeps them across restarts. @default memoryStorage() */
  storage?: Storage
  /** The clock, in epoch ms (for contact timestamps). @default Date.now */
  now?: () => number
}

interface ConversationRecord {
  level: AuthLevel
  /**
   * The level of the greeting that last renegotiated the conversation down, while it stays at
   * the renegotiated level. It is what lets HMAC messages back in after the peer floor rose.
   */
  renegotiatedBy?: AuthLevel
}

const CONV = 'auth/conv/'
const FLOOR = 'auth/floor/'
const CONTACT = 'auth/contact/'
const HMAC: SignatureAlg = 'hmac-sha256'

/**
 * Authentication-level state of SPEC §3.2 / PROFILE §5, kept per conversation and per peer and
 * persisted through {@link Storage}:
 *
 * - a conversation keeps the highest level it reached; a message below it is refused with 401
 *   `insufficient_auth_level`, except a `greeting` whose `auth_level` k is lower and that is
 *   itself verified at ≥ the current level: the explicit renegotiation, after which the level is k;
 * - once a peer was verified at level ≥ 2, new conversations with it start at that level (its
 *   *floor*) and messages verified only by `hmac-sha256` are refused, unless the conversation
 *   was renegotiated down to 0 by a greeting verified at ≥ the floor. A leaked introduction
 *   token then cannot open a fresh, weaker conversation;
 * - known contacts (pinned, introduced, accepted) are recorded separately: a level says how
 *   strongly a key is bound to an id, not whether the receiver knows the sender.
 *
 * Storage keys: `auth/conv/<from>/<conversation_id>`, `auth/floor/<agent>`,
 * `auth/contact/<agent>`, each part `encodeURIComponent`-encoded.
 *
 * @example
 * const levels = new AuthLevelTracker({ storage })
 * const result = await verifyMessage(message, resolver)
 * const decision = await levels.evaluate({
 *   from: message.from.agent, conversationId: message.conversation_id, phase: message.phase,
 *   requestedLevel: message.auth_level, level: result.level,
 *   algs: result.signatures.map((s) => s.alg),
 * }) // throws 401 insufficient_auth_level
 * // … persist the message, answer 202, then:
 * await levels.commit(decision)
 */
export class AuthLevelTracker {
  readonly #storage: Storage
  readonly #now: () => number
  // Serialises read-modify-write of the stored state, so concurrent commits cannot lower a level.
  #queue: Promise<unknown> = Promise.resolve()

  constructor(options: AuthLevelTrackerOptions = {}) {
    this.#storage = options.storage ?? memoryStorage()
    this.#now = options.now ?? Date.now
  }

  /**
   * Decide whether a verified message may be admitted at its level, without changing anything.
   *
   * @throws AgentMsgError `insufficient_auth_level` (401) when refused; `invalid_format` for an
   *   `auth_level` that is not an integer 0–3.
   */
  async evaluate(input: AuthLevelInput): Promise<AuthDecision> {
    const { from, conversationId, phase, requestedLevel, level, algs } = input
    checkLevel(level, 'level')
    if (!Array.isArray(algs)) throw new TypeError('AuthLevelTracker: algs must be an array')
    if (requestedLevel !== undefined && !isLevel(requestedLevel)) {
      throw invalidFormat('must be an integer 0–3', 'auth_level')
    }
    const conversation = await this.#conversation(from, conversationId)
    const floor = await this.peerFloor(from)
    const current = conversation?.level ?? null
    // A new conversation starts at the peer floor; an existing one keeps its own level even if
    // the floor rose later in another conversation (PROFILE §5 applies the floor to new ones).
    const baseline = current ?? floor
    const newFloor = level >= 2 && level > floor ? level : floor
    const decision = (to: AuthLevel, renegotiated: boolean): AuthDecision => ({
      from,
      conversationId,
      previousLevel: current,
      level: to,
      messageLevel: level,
      renegotiated,
      escalated: to > baseline,
      peerFloor: newFloor,
    })

    if (
      phase === 'greeting' &&
      requestedLevel !== undefined &&
      requestedLevel < baseline &&
      level >= baseline
    ) {
      return decision(requestedLevel as AuthLevel, true)
    }

    // No signature other than HMAC verified (an empty list counts: nothing stronger vouched).
    const hmacOnly = !algs.some((alg) => alg !== HMAC)
    if (floor >= 2 && hmacOnly) {
      const renegotiatedToZero =
        conversation !== undefined &&
        conversation.level <= 0 &&
        (conversation.renegotiatedBy ?? -1) >= floor
      if (!renegotiatedToZero) {
        throw new AgentMsgError(
          'insufficient_auth_level',
          `${from} has been verified at auth level ${floor}; messages signed only with ` +
            `hmac-sha256 (an introduction token, level 0) are refused unless the conversation ` +
            `is first renegotiated down by a greeting verified at level ≥ ${floor}`,
          { field: 'security.signatures' },
        )
      }
    }

    if (level < baseline) {
      const where =
        current === null
          ? `a new conversation with ${from} starts at its peer floor, auth level ${floor}`
          : `conversation ${conversationId} with ${from} is at auth level ${current}`
      throw new AgentMsgError(
        'insufficient_auth_level',
        `${where}, but this message is verified only at level ${level}; sign it with a key of ` +
          `level ≥ ${baseline}, or renegotiate with a greeting carrying auth_level < ${baseline} ` +
          `verified at level ≥ ${baseline}`,
        { field: 'security.signatures' },
      )
    }
    return decision(level, false)
  }

  /**
   * Record an accepted message's decision: the conversation level and the peer floor. Call it
   * only after the message was accepted. Levels never go down here except by a renegotiation,
   * so commits that race (or arrive out of order) keep the highest level.
   */
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
    if (how !== 'pinned' && how !== 'introduced' && how !== 'accepted') {
      throw new TypeError(`AuthLevelTracker: unknown contact source ${JSON.stringify(how)}`)
    }
    const contact: KnownContact = { how, since: this.#now() }
    await this.#storage.put(CONTACT + encodeURIComponent(agent), { ...contact })
  }

  /** True when `agent` was marked as a known contact and not forgotten. */
  async isKnownContact(agent: string): Promise<boolean> {
    return (await this.knownContact(agent)) !== undefined
  }

  /** How and when `agent` became a known contact, or `undefined`. */
  async knownContact(agent: string): Promise<KnownContact | undefined> {
    const value = await this.#storage.get(CONTACT + encodeURIComponent(agent))
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined
    const { how, since } = value
    if (
      (how !== 'pinned' && how !== 'introduced' && how !== 'accepted') ||
      typeof since !== 'number'
    ) {
      return undefined
    }
    return { how, since }
  }

  /**
   * Forget that `agent` is a known contact. Its levels and floor stay: they are protection
   * against a leaked introduction token, which forgetting a contact should not weaken.
   */
  async forgetContact(agent: string): Promise<void> {
    await this.#storage.delete(CONTACT + encodeURIComponent(agent))
  }

  async #commit(decision: AuthDecision): Promise<void> {
    checkLevel(decision.level, 'decision.level')
    checkLevel(decision.messageLevel, 'decision.messageLevel')
    checkLevel(decision.peerFloor, 'decision.peerFloor')
    const key = convKey(decision.from, decision.conversationId)
    const stored = await this.#conversation(decision.from, decision.conversationId)
    let next: ConversationRecord
    if (decision.renegotiated) {
      next = { level: decision.level, renegotiatedBy: decision.messageLevel }
    } else if (stored === undefined || decision.level > stored.level) {
      next = { level: decision.level }
    } else {
      next = stored
    }
    const floorKey = FLOOR + encodeURIComponent(decision.from)
    const floor = await this.peerFloor(decision.from)
    const ops: Array<{ type: 'put'; key: string; value: JsonValue }> = []
    if (next !== stored) ops.push({ type: 'put', key, value: { ...next } })
    if (decision.peerFloor > floor)
      ops.push({ type: 'put', key: floorKey, value: decision.peerFloor })
    // One batch, so a crash cannot leave a raised floor without the level that raised it.
    if (ops.length > 0) await this.#storage.batch(ops)
  }

  async #conversation(
    from: string,
    conversationId: string,
  ): Promise<ConversationRecord | undefined> {
    const value = await this.#storage.get(convKey(from, conversationId))
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined
    if (!isLevel(value.level)) return undefined
    const record: ConversationRecord = { level: value.level }
    if (isLevel(value.renegotiatedBy)) record.renegotiatedBy = value.renegotiatedBy
    return record
  }

  #exclusive<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(task)
    // The queue continues after a failure; the failure goes to this task's caller only.
    this.#queue = run.catch(() => undefined)
    return run
  }
}

function convKey(from: string, conversationId: string): string {
  return `${CONV}${encodeURIComponent(from)}/${encodeURIComponent(conversationId)}`
}

function isLevel(value: unknown): value is AuthLevel {
  return value === 0 || value === 1 || value === 2 || value === 3
}

function checkLevel(value: unknown, name: string): asserts value is AuthLevel {
  if (!isLevel(value)) throw new TypeError(`AuthLevelTracker: ${name} must be 0, 1, 2 or 3`)
}
