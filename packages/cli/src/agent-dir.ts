import { existsSync } from 'node:fs'
import path from 'node:path'
import { createAgent } from '@agentmsg/client'
import { fsStorage } from '@agentmsg/storage-fs'
import { CliError } from './command.js'
import { hasLegacyFiles, migrateLegacyDir, removeLegacyFiles } from './legacy.js'
import { type AgentStore, rememberRelays, storedAgentId, withStore } from './store.js'

/** What `agentmsg init` reports. */
export interface AgentSummary {
  agentId: string
  keyId: string
  kind: 'did:key' | 'url'
}

/**
 * `https://host:8443/` → `https://host:8443`: the client takes agent ids in normal form only
 * (PROFILE §2); URL parsing lower-cases the host, drops a default port and dot segments. What
 * does not parse is passed on as given, for the client's error.
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
 * Create a new identity in `dir` (did:key by default, a URL agent when `url` is given) through
 * the client, so `createAgent({ storage: await fsStorage({ dir }) })` loads the same agent.
 * Refuses when the directory already holds one, unless `force`: then everything the store
 * holds is removed first (state of the old identity means nothing to the new one).
 */
export async function createAgentDir(
  dir: string,
  options: { url?: string; display?: string; force?: boolean; relays?: string[] } = {},
): Promise<AgentSummary> {
  return withStore(dir, async (storage) => {
    const existing =
      (await storedAgentId(storage)) ??
      ((await hasLegacyFiles(dir)) ? 'a legacy agent-key.json' : undefined)
    if (existing !== undefined) {
      if (!options.force) {
        throw new CliError(
          'identity_exists',
          `${dir} holds the identity of ${existing}; refusing to overwrite an identity — pass --force to replace it, or use another --dir`,
        )
      }
      const all = await storage.list('')
      await storage.batch(all.map(([key]) => ({ type: 'delete' as const, key })))
      await removeLegacyFiles(dir)
    }
    const relays = options.relays ?? []
    const agent = await createAgent({
      storage,
      sendOnly: true,
      // A URL agent's identity document lists them (PROFILE §4 `relay.urls`).
      ...(relays.length ? { relays } : {}),
      ...(options.url !== undefined
        ? {
            identity: {
              agentId: agentUrl(options.url),
              ...(options.display !== undefined ? { display: options.display } : {}),
            },
          }
        : {}),
    })
    try {
      if (relays.length) await rememberRelays(storage, relays)
      const { agentId, keyId, document } = agent.identity
      return { agentId, keyId, kind: document ? 'url' : 'did:key' }
    } finally {
      await agent.close()
    }
  })
}

/**
 * Open the store of an agent directory for a long-running command, migrating a legacy
 * `agent-key.json` directory first. Rejects when the directory holds no identity: the client
 * would otherwise make up a new one.
 */
export async function openAgentDir(dir: string): Promise<{ storage: AgentStore; agentId: string }> {
  const noIdentity = () =>
    new CliError('no_identity', `${dir} holds no identity (run "agentmsg init --dir ${dir}" first)`)
  // Opening the store would create a mistyped directory.
  if (!existsSync(dir)) throw noIdentity()
  const storage = await fsStorage({ dir })
  try {
    const migrated = await migrateLegacyDir(dir, storage)
    if (migrated) {
      process.stderr.write(
        `agentmsg: migrated ${path.join(dir, 'agent-key.json')} (${migrated}) into the agent store ${path.join(dir, 'data')}; the old files are removed\n`,
      )
    }
    const agentId = await storedAgentId(storage)
    if (agentId === undefined) throw noIdentity()
    return { storage, agentId }
  } catch (error) {
    await storage.close?.()
    throw error
  }
}

/**
 * {@link openAgentDir}, or the pid of the live process holding the directory's lock (an
 * `agentmsg inbox` or `listen`: one process per store, storage-fs takes an exclusive lock).
 */
export async function openOrInUse(
  dir: string,
): Promise<{ storage: AgentStore; agentId: string } | { inUse: number }> {
  try {
    return await openAgentDir(dir)
  } catch (error) {
    const locked = /is locked by process (\d+)/.exec((error as Error).message ?? '')
    if (locked) return { inUse: Number(locked[1]) }
    throw error
  }
}
