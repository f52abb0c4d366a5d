/**
 * An agent directory is an `fsStorage` store: the client's state (the seed in 0600 files),
 * `cli/relays`, and `dev-tls/` for `inbox --dev-tls`. The CLI reads none of the client's
 * records: it opens the agent through the client.
 */
import { existsSync } from 'node:fs'
import { createAgent, type OwnIdentity } from '@agentmsg/client'
import { isAgentMsgError } from '@agentmsg/core'
import { fsStorage } from '@agentmsg/storage-fs'
import { CliError } from './command.js'

export type AgentStore = Awaited<ReturnType<typeof fsStorage>>

/** The directory's agent as the client stored it, if it holds one. */
async function storedIdentity(storage: AgentStore): Promise<OwnIdentity | undefined> {
  try {
    const agent = await createAgent({
      storage,
      sendOnly: true,
      transports: [],
      identity: { create: false },
    })
    await agent.close()
    return agent.identity
  } catch (error) {
    if (isAgentMsgError(error) && error.code === 'not_found') return undefined
    throw error
  }
}

/** The relays `--relay` gave `init`, `listen` or `inbox` (a did:key has no document to list them). */
const RELAYS_KEY = 'cli/relays'

/** The remembered relays, else a URL agent's document's `relay.urls`, else none. */
export async function storedRelays(storage: AgentStore, identity: OwnIdentity): Promise<string[]> {
  const remembered = (await storage.get(RELAYS_KEY)) as { relays?: unknown } | undefined
  const relays = Array.isArray(remembered?.relays)
    ? remembered.relays
    : (identity.document?.relay?.urls ?? [])
  return relays.filter((r): r is string => typeof r === 'string')
}

/** Remember `relays` for the directory's agent (replacing the list). */
export async function rememberRelays(storage: AgentStore, relays: string[]): Promise<void> {
  await storage.put(RELAYS_KEY, { relays })
}

/**
 * `https://host:8443/` → `https://host:8443`: the client takes agent ids in normal form only
 * (PROFILE §2). What does not parse is passed on as given, for the client's error.
 */
function agentUrl(url: string): string {
  try {
    const parsed = new URL(url)
    if (parsed.search || parsed.hash) return url
    return parsed.href.replace(/\/$/, '')
  } catch {
    return url
  }
}

/**
 * Create a new identity in `dir` (a did:key, or a URL agent at `url`) through the client.
 * Refuses when the directory holds one, unless `force`: then everything it holds goes first.
 */
export async function createAgentDir(
  dir: string,
  options: { url?: string; display?: string; force?: boolean; relays?: string[] } = {},
): Promise<{ agent_id: string; key_id: string; dir: string; kind: 'did:key' | 'url' }> {
  const storage = await fsStorage({ dir })
  try {
    const existing = await storedIdentity(storage)
    if (existing !== undefined) {
      if (!options.force) {
        throw new CliError(
          'identity_exists',
          `${dir} holds the identity of ${existing.agentId}; refusing to overwrite an identity — pass --force to replace it, or use another --dir`,
        )
      }
      const all = await storage.list('')
      await storage.batch(all.map(([key]) => ({ type: 'delete' as const, key })))
    }
    const relays = options.relays ?? []
    const { url, display } = options
    const agent = await createAgent({
      storage,
      sendOnly: true,
      // A URL agent's identity document lists them (PROFILE §4 `relay.urls`).
      relays,
      identity: url === undefined ? undefined : { agentId: agentUrl(url), display },
    })
    await agent.close()
    if (relays.length) await rememberRelays(storage, relays)
    const { agentId, keyId, document } = agent.identity
    return { agent_id: agentId, key_id: keyId, dir, kind: document ? 'url' : 'did:key' }
  } finally {
    await storage.close?.()
  }
}

/** An opened agent directory: its store (holding its lock) and its agent's identity. */
export interface OpenedDir {
  storage: AgentStore
  agentId: string
  identity: OwnIdentity
}

/** Open the store of an agent directory; rejects when it holds no identity. */
export async function openAgentDir(dir: string): Promise<OpenedDir> {
  const noIdentity = () =>
    new CliError('no_identity', `${dir} holds no identity (run "agentmsg init --dir ${dir}" first)`)
  // Opening the store would create a mistyped directory.
  if (!existsSync(dir)) throw noIdentity()
  const storage = await fsStorage({ dir })
  try {
    const identity = await storedIdentity(storage)
    if (identity === undefined) throw noIdentity()
    return { storage, agentId: identity.agentId, identity }
  } catch (error) {
    await storage.close?.()
    throw error
  }
}

/** {@link openAgentDir}, or the pid of the `agentmsg inbox` or `listen` holding its lock. */
export async function openOrInUse(dir: string): Promise<OpenedDir | { inUse: number }> {
  try {
    return await openAgentDir(dir)
  } catch (error) {
    const locked = /is locked by process (\d+)/.exec((error as Error).message ?? '')
    if (locked) return { inUse: Number(locked[1]) }
    throw error
  }
}
