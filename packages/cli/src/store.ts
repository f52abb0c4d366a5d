import { STORAGE_KEYS } from '@agentmsg/client'
import { fsStorage } from '@agentmsg/storage-fs'

/**
 * An agent directory is an `fsStorage` store: the client's identity record under
 * `STORAGE_KEYS.self` (written 0600), its replay, auth-level, contact and conversation state,
 * and `dev-tls/` for `inbox --dev-tls`. The CLI keeps no identity format of its own.
 */
export type AgentStore = Awaited<ReturnType<typeof fsStorage>>

/** The agent id of the identity the client stored in `storage`, if any. */
export async function storedAgentId(storage: AgentStore): Promise<string | undefined> {
  const record = await storage.get(STORAGE_KEYS.self)
  if (record === undefined) return undefined
  const agentId = (record as { agentId?: unknown } | null)?.agentId
  if (typeof agentId !== 'string')
    throw new Error('the identity record in the store has no agent id')
  return agentId
}

/** Runs `task` with the directory's store open (holding its lock), and closes it after. */
export async function withStore<T>(
  dir: string,
  task: (storage: AgentStore) => Promise<T>,
): Promise<T> {
  const storage = await fsStorage({ dir })
  try {
    return await task(storage)
  } finally {
    await storage.close?.()
  }
}
