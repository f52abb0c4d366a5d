import { readFile, rm, stat } from 'node:fs/promises'
import path from 'node:path'
import { type AgentOptions, createAgent, STORAGE_KEYS } from '@agentmsg/client'
import { type AgentStore, storedAgentId } from './store.js'

// Directories written by earlier versions of `agentmsg init` held the identity in files of
// their own: `agent-key.json` (`{agent_id, key_id, secret_key}`, the Ed25519 seed in base64url,
// mode 0600) and, for URL agents, `identity.json` (the identity document). The seed and the
// agent id are all the client needs, so such directories are migrated, not refused.
const LEGACY_KEY = 'agent-key.json'
const LEGACY_DOCUMENT = 'identity.json'

type IdentityDocument = NonNullable<NonNullable<AgentOptions['identity']>['document']>

interface LegacyKeyFile {
  agent_id: string
  secret_key: string
}

/** Whether `dir` still holds a legacy identity file. */
export async function hasLegacyFiles(dir: string): Promise<boolean> {
  return stat(path.join(dir, LEGACY_KEY)).then(
    () => true,
    (error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return false
      throw error
    },
  )
}

/** Delete the legacy files (the secret must not linger in a second place). */
export async function removeLegacyFiles(dir: string): Promise<void> {
  await rm(path.join(dir, LEGACY_KEY), { force: true })
  await rm(path.join(dir, LEGACY_DOCUMENT), { force: true })
}

async function readLegacy(
  dir: string,
): Promise<{ key: LegacyKeyFile; seed: Uint8Array; document?: IdentityDocument } | undefined> {
  const keyFile = path.join(dir, LEGACY_KEY)
  let text: string
  try {
    text = await readFile(keyFile, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  }
  const key = JSON.parse(text) as Partial<LegacyKeyFile> | null
  if (typeof key?.agent_id !== 'string' || typeof key.secret_key !== 'string') {
    throw new Error(
      `${keyFile} has no agent_id and secret_key; move it away and run "agentmsg init --dir ${dir}"`,
    )
  }
  const seed = new Uint8Array(Buffer.from(key.secret_key, 'base64url'))
  if (seed.length !== 32) throw new Error(`${keyFile}: secret_key is not a 32-byte Ed25519 seed`)
  if (!key.agent_id.startsWith('https://')) return { key: key as LegacyKeyFile, seed }
  const document = JSON.parse(
    await readFile(path.join(dir, LEGACY_DOCUMENT), 'utf8'),
  ) as IdentityDocument
  return { key: key as LegacyKeyFile, seed, document }
}

/**
 * Move a legacy identity into the client's store, then delete the legacy files. Returns the
 * migrated agent id, or `undefined` when there was nothing to migrate. The store is written
 * (durably) before the files go, so a crash in between leaves a directory this finishes.
 */
export async function migrateLegacyDir(
  dir: string,
  storage: AgentStore,
): Promise<string | undefined> {
  const legacy = await readLegacy(dir)
  if (!legacy) return undefined
  const { key, seed, document } = legacy
  const stored = await storedAgentId(storage)
  if (stored !== undefined) {
    if (stored !== key.agent_id) {
      throw new Error(
        `${dir} holds ${LEGACY_KEY} of ${key.agent_id} and a stored identity of ${stored}; move one away`,
      )
    }
  } else {
    // The client checks the seed against the document's active key (URL agents) and derives
    // the did:key from it; a mismatch with the recorded agent id undoes the write.
    const agent = await createAgent({
      storage,
      sendOnly: true,
      identity: document === undefined ? { seed } : { seed, agentId: key.agent_id, document },
    })
    const agentId = agent.id
    await agent.close()
    if (agentId !== key.agent_id) {
      await storage.delete(STORAGE_KEYS.self)
      throw new Error(
        `${path.join(dir, LEGACY_KEY)}: the secret key does not match ${key.agent_id}`,
      )
    }
  }
  await removeLegacyFiles(dir)
  return key.agent_id
}
