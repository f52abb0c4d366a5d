/**
 * Storage written by earlier versions, moved to where it is read now, so an existing agent's
 * storage keeps working. Transports now keep their state under their own namespace
 * (`<protocol>/…`); the relay's cursors and subscriptions were already under `relay/`.
 */
import type { Storage, StorageOp } from '@agentmsg/core'

/** Old prefix → new prefix. */
const MOVES: ReadonlyArray<{ from: string; to: string }> = [
  // The https sender's durable outbox, now the https transport's.
  { from: 'outbox/', to: 'https/outbox/' },
]

/** Rows moved per batch. */
const CHUNK = 100

export async function migrateStorage(storage: Storage): Promise<void> {
  for (const { from, to } of MOVES) {
    for (;;) {
      const rows = await storage.list(from, { limit: CHUNK })
      if (rows.length === 0) break
      const ops: StorageOp[] = []
      for (const [key, value] of rows) {
        ops.push({ type: 'put', key: to + key.slice(from.length), value })
        ops.push({ type: 'delete', key })
      }
      // One batch per chunk: a row is in exactly one place at any time.
      await storage.batch(ops)
    }
  }
}
