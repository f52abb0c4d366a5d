/**
 * A pane's chat history, kept in IndexedDB next to (not inside) its agent's storage: the agent
 * remembers identity, contacts, conversations and relay cursors, not the messages it handed
 * over, which are the application's to keep. One database per pane (`<dbName>-history`), one
 * record per message id, so a message delivered again after a reload is stored once.
 */
import type { JsonValue, Storage } from '@agentmsg/core'
import { indexedDbStorage } from '@agentmsg/storage-indexeddb'

/** One hop of `message.trace.received` (SPEC §2.7). */
export interface TraceHop {
  by: string
  at: string
}

/** A message as a pane shows it. */
export interface Row {
  direction: 'in' | 'out'
  messageId: string
  /** The other agent (the room's topic, for a message posted to the room). */
  peer: string
  /** The room's topic, for a room message (PROFILE §9 pub/sub). */
  topic?: string
  text: string
  /** When it was shown first (ms), for ordering. */
  shownAt: number
  /** The relay it went through (`relayUrl` of the send, or the relay in the trace). */
  relayUrl: string | undefined
  /**
   * Whether the body was sealed for its recipient (PROFILE §8); `'not-for-me'`: a room message
   * sealed for the other members only.
   */
  sealed: boolean | 'not-for-me'
  /** Posted to the room: the agents it was sealed for. */
  sealedFor?: string[]
  /** Received only: the level it verified at (PROFILE §5). */
  level?: number
  /** Received only: whether the sender was a known contact when it arrived (PROFILE §5). */
  knownContact?: boolean
  /** Received only: the relays that handled it. */
  trace?: TraceHop[]
}

export interface History {
  all(): Promise<Row[]>
  /** Keep `row`; false when a row of that direction and message id is already kept. */
  add(row: Row): Promise<boolean>
}

const PREFIX = 'm/'

export async function openHistory(dbName: string): Promise<History> {
  const storage: Storage = await indexedDbStorage({ dbName: `${dbName}-history` })
  return {
    async all() {
      const rows = (await storage.list(PREFIX)).map(([, value]) => value as unknown as Row)
      return rows.sort((a, b) => a.shownAt - b.shownAt)
    },
    async add(row) {
      const key = `${PREFIX}${row.direction}/${row.messageId}`
      if ((await storage.get(key)) !== undefined) return false
      // Optional members left undefined are dropped: storage values are JSON.
      await storage.put(key, JSON.parse(JSON.stringify(row)) as JsonValue)
      return true
    },
  }
}
