/**
 * Conversation sequence numbers (SPEC: `sequence` counts the messages of a conversation, both
 * directions). One update rule for everything: after a message with sequence `n` — sent,
 * received or replied to — the next one is at least `n + 1`.
 *
 * State is kept per (peer, conversation): a conversation id is no secret, and a third agent
 * using it must not move the numbers of our conversation with someone else (pushing them to
 * 2^53−1 would stop our sends to that peer).
 */
import type { JsonValue, Storage } from '@agentmsg/core'

/** What `conv/<peer>/<conversation_id>` holds (URI-encoded components). */
export interface ConversationRecord {
  /** The other agent. */
  peer: string
  /** The sequence number the next message of this agent takes. */
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
