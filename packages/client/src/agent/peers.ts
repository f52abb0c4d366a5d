/**
 * Where peers can be reached: relays remembered per agent (`peers/<agent>`), from the verified
 * `from.relays` of their messages, relays given to `send`, or pinned with a contact (PROFILE §9).
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
