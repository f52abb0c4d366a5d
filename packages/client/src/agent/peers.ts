/**
 * What the agent remembers of its peers. Where they can be reached: relays remembered per agent
 * (`peers/<agent>`), from the verified `from.relays` of their messages, relays that took a send to
 * them,
 * or pinned with a contact (PROFILE §9). And conversation sequence numbers (SPEC: `sequence`
 * counts a conversation's messages, both ways): after a message with sequence `n` — sent,
 * received or replied to — the next is at least n + 1. Kept per (peer, conversation): a
 * conversation id is no secret, and a third agent using it must not move the numbers of our
 * conversation with someone else (2^53−1 would stop our sends).
 */
import type { JsonValue, Storage } from '@agentmsg/core'
import { assertRelayUrl } from '@agentmsg/core/http'

/** What `peers/<agent>` holds. */
export interface PeerRecord {
  relays: string[]
  updated: number
}

/** Most relays remembered per peer (the newest first). */
const MAX_RELAYS = 8

const PREFIX = 'peers/'

export class PeerRelays {
  readonly #storage: Storage
  readonly #now: () => number

  constructor(storage: Storage, now: () => number) {
    this.#storage = storage
    this.#now = now
  }

  /** Remember `relays` for `agent`, newest first; entries that are not relay URLs are ignored. */
  async remember(agent: string, relays: readonly string[]): Promise<void> {
    const valid: string[] = []
    for (const r of relays) {
      try {
        valid.push(assertRelayUrl(r, 'relays'))
      } catch {
        // a bad entry is ignored, the others are kept
      }
    }
    if (valid.length === 0) return
    const key = PREFIX + encodeURIComponent(agent)
    const prev = (await this.#storage.get(key)) as PeerRecord | undefined
    const merged = [...new Set([...valid, ...(prev?.relays ?? [])])].slice(0, MAX_RELAYS)
    if (prev && prev.relays.join('\n') === merged.join('\n')) return
    const record: PeerRecord = { relays: merged, updated: this.#now() }
    await this.#storage.put(key, record as unknown as JsonValue)
  }

  async of(agent: string): Promise<string[]> {
    const key = PREFIX + encodeURIComponent(agent)
    return ((await this.#storage.get(key)) as PeerRecord | undefined)?.relays ?? []
  }

  /** Every peer with remembered relays. */
  async list(): Promise<Array<{ agent: string; relays: string[] }>> {
    const entries = await this.#storage.list(PREFIX)
    return entries.map(([key, value]) => ({
      agent: decodeURIComponent(key.slice(PREFIX.length)),
      relays: (value as unknown as PeerRecord).relays,
    }))
  }

  async forget(agent: string): Promise<void> {
    await this.#storage.delete(PREFIX + encodeURIComponent(agent))
  }
}

/** What `conv/<peer>/<conversation_id>` holds: `next`, the sequence our next message takes. */
export interface ConversationRecord {
  peer: string
  next: number
}

/**
 * The sequence update, the only one: `record` after a message with `sequence` was seen in the
 * conversation with `peer`. The peer of an existing record stays.
 */
export function advanceConversation(
  record: ConversationRecord | undefined,
  peer: string,
  sequence: number,
): ConversationRecord {
  return { peer: record?.peer ?? peer, next: Math.max(record?.next ?? 0, sequence + 1) }
}

/** Conversations in storage; updates run one at a time. */
export class Conversations {
  readonly #storage: Storage
  #lock: Promise<unknown> = Promise.resolve()

  constructor(storage: Storage) {
    this.#storage = storage
  }

  /** A message with `sequence` was received (or is being answered) in `conversationId`. */
  async seen(conversationId: string, peer: string, sequence: number): Promise<void> {
    await this.#update(conversationId, peer, () => sequence)
  }

  /**
   * The sequence number for a message this agent sends now, persisted before it goes out;
   * `isNew` when the conversation starts with it.
   */
  async take(conversationId: string, peer: string): Promise<{ sequence: number; isNew: boolean }> {
    return this.#update(conversationId, peer, (record) => record?.next ?? 0)
  }

  #update(
    conversationId: string,
    peer: string,
    pick: (record: ConversationRecord | undefined) => number,
  ): Promise<{ sequence: number; isNew: boolean }> {
    const run = this.#lock.then(async () => {
      const key = `conv/${encodeURIComponent(peer)}/${encodeURIComponent(conversationId)}`
      const record = (await this.#storage.get(key)) as ConversationRecord | undefined
      const sequence = pick(record)
      const next = advanceConversation(record, peer, sequence)
      if (record?.next !== next.next || record.peer !== next.peer) {
        await this.#storage.put(key, next as unknown as JsonValue)
      }
      return { sequence, isNew: record === undefined }
    })
    this.#lock = run.catch(() => undefined)
    return run
  }
}
