import { chmod, mkdir, open, readFile, rename } from 'node:fs/promises'
import path from 'node:path'
import {
  base64urlDecode,
  base64urlEncode,
  createIdentityDocument,
  didKeyFragment,
  didKeyFromPublicKey,
  generateKeyPair,
  keyPairFromSeed,
  normalizeAgentUrl,
  validateIdentityDocument,
  type IdentityDocument,
  type KeyPair,
} from '@agentmsg/core'

/** What `agentmsg init` writes into an agent directory. */
export interface AgentFiles {
  agentId: string
  /** Full key id `<agent>#<fragment>`. */
  keyId: string
  keys: KeyPair
  /** URL agents only. */
  identity?: IdentityDocument
}

const KEY_FILE = 'agent-key.json'
const IDENTITY_FILE = 'identity.json'

/** Write a file atomically (temp + fsync + rename) with the given mode. */
async function writeAtomic(file: string, text: string, mode: number): Promise<void> {
  const tmp = `${file}.${process.pid}.tmp`
  const fh = await open(tmp, 'w', mode)
  try {
    await fh.writeFile(text)
    await fh.sync()
  } finally {
    await fh.close()
  }
  await chmod(tmp, mode)
  await rename(tmp, file)
}

/** Create a new identity in `dir`: did:key by default, a URL agent when `url` is given. */
export async function createAgentDir(
  dir: string,
  options: { url?: string; display?: string; force?: boolean } = {},
): Promise<AgentFiles> {
  await mkdir(dir, { recursive: true, mode: 0o700 })
  const keyFile = path.join(dir, KEY_FILE)
  if (!options.force) {
    try {
      await readFile(keyFile)
      throw new Error(`${keyFile} exists; refusing to overwrite an identity (use --force)`)
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e
    }
  }
  const keys = await generateKeyPair()
  let agentId: string
  let keyId: string
  let identity: IdentityDocument | undefined
  if (options.url !== undefined) {
    agentId = normalizeAgentUrl(options.url)
    identity = createIdentityDocument({
      agentId,
      publicKey: keys.publicKey,
      ...(options.display !== undefined ? { display: options.display } : {}),
    })
    keyId = `${agentId}#${identity.keys[0]!.key_id}`
  } else {
    agentId = didKeyFromPublicKey(keys.publicKey)
    keyId = `${agentId}#${didKeyFragment(agentId)}`
  }
  // The secret key file is written with mode 0600: only its owner may read it.
  await writeAtomic(
    keyFile,
    JSON.stringify({ agent_id: agentId, key_id: keyId, secret_key: base64urlEncode(keys.secretKey) }, null, 2) + '\n',
    0o600,
  )
  if (identity) await writeAtomic(path.join(dir, IDENTITY_FILE), JSON.stringify(identity, null, 2) + '\n', 0o644)
  return { agentId, keyId, keys, ...(identity ? { identity } : {}) }
}

/** Load the identity `agentmsg init` wrote into `dir`. */
export async function loadAgentDir(dir: string): Promise<AgentFiles> {
  const keyFile = path.join(dir, KEY_FILE)
  let raw: { agent_id: string; key_id: string; secret_key: string }
  try {
    raw = JSON.parse(await readFile(keyFile, 'utf8'))
  } catch (e) {
    throw new Error(`cannot read ${keyFile} (run "agentmsg init --dir ${dir}" first): ${(e as Error).message}`)
  }
  const keys = await keyPairFromSeed(base64urlDecode(raw.secret_key, 'secret_key'))
  let identity: IdentityDocument | undefined
  if (raw.agent_id.startsWith('https://')) {
    identity = validateIdentityDocument(JSON.parse(await readFile(path.join(dir, IDENTITY_FILE), 'utf8')), {
      expectedAgentId: raw.agent_id,
    })
  } else if (didKeyFromPublicKey(keys.publicKey) !== raw.agent_id) {
    throw new Error(`${keyFile}: the secret key does not match ${raw.agent_id}`)
  }
  return { agentId: raw.agent_id, keyId: raw.key_id, keys, ...(identity ? { identity } : {}) }
}

export { writeAtomic }
