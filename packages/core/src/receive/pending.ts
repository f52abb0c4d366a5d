/**
 * Accepted messages kept in storage from before the transport is told `accepted` (an inbox's
 * 202) until the application has handled them (PROFILE §6: persist → 202 → process), so a
 * crash loses nothing: the next receiver on the same storage loads them and processes them.
 */
import type { KeySource } from '../auth-level.js'
import { hexEncode, randomBytes } from '../bytes.js'
import type { Storage } from '../interfaces/storage.js'
import { validateMessage } from '../message.js'
import type { AuthLevel, JsonValue, Message } from '../types.js'

// The inbox's prefix from before the pipeline moved here: messages stored by older versions
// are still found.
const PREFIX = 'inbox/pending/'
/** Records stored before `transport` was kept came from the inbox. */
const LEGACY_TRANSPORT = 'https'

/** An accepted message on its way to the application, and its storage key when persisted. */
export interface Job {
  key: string | undefined
  message: Message
  level: AuthLevel
  source: KeySource
  keyId: string
  /** The transport that delivered it. */
  transport: string
  /**
   * Whether its body was sealed. `message` then holds the opened body, which is what is
   * persisted: the agent's own storage also holds its seeds, so plaintext there exposes
   * nothing more, and a restart delivers it without opening again (a rotated or revoked key
   * cannot strand it). Records from before sealing have no flag: not sealed.
   */
  sealed: boolean
}

type StoredJob = Omit<Job, 'key'>

export class PendingStore {
  readonly #storage: Storage
  readonly #now: () => number
  #seq = 0

  constructor(storage: Storage, now: () => number) {
    this.#storage = storage
    this.#now = now
  }

  /** Persist `job` under a new key (set on the job), durable when this resolves. */
  async add(job: Job): Promise<void> {
    // Sortable by acceptance time, so a restart processes messages in arrival order.
    const seq = (this.#seq++ % 1e9).toString().padStart(9, '0')
    const time = this.#now().toString().padStart(15, '0')
    job.key = `${PREFIX}${time}-${seq}-${hexEncode(randomBytes(4))}`
    const record: StoredJob = {
      message: job.message,
      level: job.level,
      source: job.source,
      keyId: job.keyId,
      transport: job.transport,
      sealed: job.sealed,
    }
    await this.#storage.put(job.key, record as unknown as JsonValue)
  }

  /** Forget a job (processed, or not accepted after all). */
  async remove(job: Job): Promise<void> {
    if (job.key !== undefined) await this.#storage.delete(job.key)
  }

  /**
   * Every stored job, oldest first. A record that cannot be read is reported to `onBad`
   * and deleted, so it cannot block the ones after it on every start.
   */
  async load(onBad: (error: unknown) => void): Promise<Job[]> {
    const jobs: Job[] = []
    for (const [key, value] of await this.#storage.list(PREFIX)) {
      const record = value as Partial<StoredJob> | null
      try {
        const { message } = validateMessage(record?.message)
        const { level, source, keyId, transport, sealed } = record as Partial<StoredJob>
        if (typeof keyId !== 'string' || typeof level !== 'number' || typeof source !== 'string') {
          throw new TypeError('level, source or keyId missing')
        }
        const via = typeof transport === 'string' ? transport : LEGACY_TRANSPORT
        jobs.push({ key, message, level, source, keyId, transport: via, sealed: sealed === true })
      } catch (error) {
        onBad(new Error(`receiver: dropping unreadable stored message ${key}`, { cause: error }))
        await this.#storage.delete(key)
      }
    }
    return jobs
  }
}
