/**
 * Accepted messages kept in storage from before the 202 until the application has handled them
 * (PROFILE §6: persist → 202 → process), so a crash loses nothing: the next handler on the same
 * storage loads them and processes them.
 */
import {
  hexEncode,
  randomBytes,
  validateMessage,
  type AuthLevel,
  type JsonValue,
  type KeySource,
  type Message,
  type Storage,
} from '@agentmsg/core'

const PREFIX = 'inbox/pending/'

/** An accepted message on its way to the application, and its storage key when persisted. */
export interface Job {
  key: string | undefined
  message: Message
  level: AuthLevel
  source: KeySource
  keyId: string
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
        const { level, source, keyId } = record as Partial<StoredJob>
        if (typeof keyId !== 'string' || typeof level !== 'number' || typeof source !== 'string') {
          throw new TypeError('level, source or keyId missing')
        }
        jobs.push({ key, message, level, source, keyId })
      } catch (error) {
        onBad(new Error(`inbox: dropping unreadable stored message ${key}`, { cause: error }))
        await this.#storage.delete(key)
      }
    }
    return jobs
  }
}
