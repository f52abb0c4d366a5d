/** Accepted messages kept in storage until handled (PROFILE §6), for the next receiver after a crash. */
import type { KeySource } from '../auth-level.js'
import { hexEncode, randomBytes } from '../bytes.js'
import type { Storage } from '../interfaces/storage.js'
import { validateMessage } from '../message.js'
import type { AuthLevel, JsonValue, Message } from '../types.js'
import type { Sealed } from './types.js'

const PREFIX = 'inbox/pending/'

/** An accepted message on its way to the application, and its storage key once persisted. */
export interface Job {
  key?: string
  message: Message
  level: AuthLevel
  source: KeySource
  keyId: string
  transport: string
  // `message` holds the opened body, persisted: storage holds the seeds anyway, and a rotated
  // key cannot strand it.
  sealed: Sealed
}

export class PendingStore {
  #seq = 0

  constructor(
    readonly storage: Storage,
    readonly now: () => number,
  ) {}

  /** Persist `job` under a new key, sorted by acceptance time. */
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
        if (
          typeof keyId !== 'string' ||
          typeof level !== 'number' ||
          typeof source !== 'string' ||
          typeof transport !== 'string'
        ) {
          throw new TypeError('level, source, keyId or transport missing')
        }
        jobs.push({
          key,
          message,
          level,
          source,
          keyId,
          transport,
          sealed: sealed === 'not-for-me' ? sealed : sealed === true,
        })
      } catch (error) {
        onBad(new Error(`receiver: dropping unreadable stored message ${key}`, { cause: error }))
        await this.storage.delete(key)
      }
    }
    return jobs
  }
}
