/**
 * Accepted messages kept in storage from before the transport is told `accepted` until the
 * application handled them (PROFILE §6: persist → 202 → process): after a crash the next
 * receiver on the same storage processes them.
 */
import type { KeySource } from '../auth-level.js'
import { hexEncode, randomBytes } from '../bytes.js'
import type { Storage } from '../interfaces/storage.js'
import { validateMessage } from '../message.js'
import type { AuthLevel, JsonValue, Message } from '../types.js'

const PREFIX = 'inbox/pending/'

/** An accepted message on its way to the application, and its storage key once persisted. */
export interface Job {
  key: string | undefined
  message: Message
  level: AuthLevel
  source: KeySource
  keyId: string
  transport: string
  /**
   * Whether its body was sealed: `message` holds the opened body, and that is persisted. The
   * agent's storage holds its seeds too, so this exposes nothing more, and a restart delivers it
   * without opening again (a rotated key cannot strand it).
   */
  sealed: boolean
}

export class PendingStore {
  #seq = 0

  constructor(
    readonly storage: Storage,
    readonly now: () => number,
  ) {}

  /** Persist `job` under a new key, sortable by acceptance time (a restart keeps the order). */
  async add(job: Job): Promise<void> {
    const seq = (this.#seq++ % 1e9).toString().padStart(9, '0')
    const time = this.now().toString().padStart(15, '0')
    job.key = `${PREFIX}${time}-${seq}-${hexEncode(randomBytes(4))}`
    const { key: _key, ...record } = job
    await this.storage.put(job.key, record as unknown as JsonValue)
  }

  async remove(job: Job): Promise<void> {
    if (job.key !== undefined) await this.storage.delete(job.key)
  }

  /** Every stored job, oldest first; an unreadable record goes to `onBad` and is deleted. */
  async load(onBad: (error: unknown) => void): Promise<Job[]> {
    const jobs: Job[] = []
    for (const [key, value] of await this.storage.list(PREFIX)) {
      const record = value as Partial<Job> | null
      try {
        const { message } = validateMessage(record?.message)
        const { level, source, keyId, transport, sealed } = record as Partial<Job>
        if (typeof keyId !== 'string' || typeof level !== 'number' || typeof source !== 'string') {
          throw new TypeError('level, source or keyId missing')
        }
        // Records written before `transport` was kept came from the inbox.
        const via = typeof transport === 'string' ? transport : 'https'
        jobs.push({ key, message, level, source, keyId, transport: via, sealed: sealed === true })
      } catch (error) {
        onBad(new Error(`receiver: dropping unreadable stored message ${key}`, { cause: error }))
        await this.storage.delete(key)
      }
    }
    return jobs
  }
}
