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

/**
 * The relays the CLI remembers for the directory's agent: given to `init`, `listen` or `inbox`
 * with `--relay`, used by them when it is left out. (A URL agent's identity document lists them
 * too; a did:key agent has no document, so the CLI keeps them here.)
 */
export const RELAYS_KEY = 'cli/relays'

/** The remembered relays, else a URL agent's document's `relay.urls`, else none. */
export async function storedRelays(storage: AgentStore): Promise<string[]> {
  const remembered = (await storage.get(RELAYS_KEY)) as { relays?: unknown } | undefined
  if (Array.isArray(remembered?.relays))
    return remembered.relays.filter((r): r is string => typeof r === 'string')
  const self = (await storage.get(STORAGE_KEYS.self)) as {
    document?: { relay?: { urls?: unknown } }
  } | null
  const urls = self?.document?.relay?.urls
  return Array.isArray(urls) ? urls.filter((r): r is string => typeof r === 'string') : []
}

/** Remember `relays` for the directory's agent (replacing the list). */
export async function rememberRelays(storage: AgentStore, relays: string[]): Promise<void> {
  await storage.put(RELAYS_KEY, { relays })
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
