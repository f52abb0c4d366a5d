import { parseAgentId } from './agent-id.js'
import { base64urlDecode, base64urlEncode } from './base64url.js'
import { constantTimeEqual } from './bytes.js'
import { isDidKey, publicKeyFromDidKey } from './did-key.js'
import { invalidFormat } from './errors.js'
import {
  type IdentityDocument,
  publicKeyOf,
  validateIdentityDocument,
} from './identity/document.js'
import type { Storage, StorageOp } from './interfaces/storage.js'
import { introductionFragment } from './introduction-token.js'
import type { KeyLookup, KeyResolution, KeyResolver, ResolvedKey } from './resolver.js'
import { memoryStorage } from './storage/memory.js'
import type { JsonValue, Message } from './types.js'

/** A peer key the store holds. */
export interface StoredKey {
  agent: string
  fragment: string
  publicKey: string
  source: 'pinned' | 'introduction'
  added: number
}

const KEY_PREFIX = 'keys/peer/'
const SECRET_PREFIX = 'keys/secret/'
const PEER_PREFIX = 'keys/intro-peer/'

const keyName = (agent: string, fragment: string) =>
  `${KEY_PREFIX}${encodeURIComponent(agent)}/${encodeURIComponent(fragment)}`

/**
 * Keys learned outside documents and did:key (PROFILE §4, §5): pinned (level 2), introduced
 * (level 1, never replacing one), introduction tokens (level 0). Last in the resolver chain.
 */
export class KeyStore implements KeyResolver {
  readonly #storage: Storage
  readonly #now: () => number
  // Binding runs one at a time, so two first greetings cannot both win a token.
  #binding: Promise<unknown> = Promise.resolve()

  constructor(options: { storage?: Storage; now?: () => number } = {}) {
    this.#storage = options.storage ?? memoryStorage()
    this.#now = options.now ?? Date.now
  }

  /** Pin a peer's key after the humans compared its fingerprint out of band (level 2). */
  async pin(agent: string, fragment: string, publicKey: Uint8Array): Promise<void> {
    await this.#put(agent, fragment, publicKey, 'pinned')
  }

  /** Store the keys of a document received in a level-0 introduction (level 1, never replacing). */
  async addIntroducedKeys(document: IdentityDocument): Promise<string[]> {
    const added: string[] = []
    for (const key of document.keys) {
      if (key.type !== 'ed25519' || key.status === 'revoked') continue
      if ((await this.#storage.get(keyName(document.agent_id, key.key_id))) !== undefined) continue
      await this.#put(document.agent_id, key.key_id, publicKeyOf(key), 'introduction')
      added.push(key.key_id)
    }
    return added
  }

  /** Drop introduced keys a URL agent's fetched document does not list as they are (PROFILE §5). */
  async reconcileWithDocument(document: IdentityDocument): Promise<string[]> {
    const listed = new Map<string, string>()
    for (const k of document.keys) {
      if (k.type === 'ed25519') listed.set(k.key_id, base64urlEncode(publicKeyOf(k)))
    }
    const dropped: string[] = []
    for (const k of await this.keysOf(document.agent_id)) {
      if (k.source === 'introduction' && listed.get(k.fragment) !== k.publicKey) {
        await this.#storage.delete(keyName(k.agent, k.fragment))
        dropped.push(k.fragment)
      }
    }
    return dropped
  }

  /** Every key kept for `agent`. */
  async keysOf(agent: string): Promise<StoredKey[]> {
    return (await this.#storage.list(keyName(agent, ''))).map(([, v]) => v as unknown as StoredKey)
  }

  /** Forget one key, or all keys of an agent. */
  async remove(agent: string, fragment?: string): Promise<void> {
    if (fragment !== undefined) return this.#storage.delete(keyName(agent, fragment))
    const rows = await this.#storage.list(keyName(agent, ''))
    await this.#storage.batch(rows.map(([key]) => ({ type: 'delete' as const, key })))
  }

  /** Hold an introduction token for one peer (PROFILE §5): `agent`, else the first to verify. */
  async addIntroductionToken(token: string, agent?: string): Promise<string> {
    const secret = base64urlDecode(token, 'token')
    if (secret.length !== 32) throw invalidFormat('an introduction token is 32 bytes', 'token')
    const fragment = await introductionFragment(secret)
    const ops: StorageOp[] = [{ type: 'put', key: SECRET_PREFIX + fragment, value: token }]
    if (agent !== undefined) {
      ops.push({ type: 'put', key: PEER_PREFIX + fragment, value: parseAgentId(agent, 'agent').id })
    }
    await this.#storage.batch(ops)
    return fragment
  }

  /** The agent an introduction token introduces, once named or bound; `undefined` before. */
  async introducedPeer(token: string): Promise<string | undefined> {
    const fragment = await introductionFragment(base64urlDecode(token, 'token'))
    const peer = await this.#storage.get(PEER_PREFIX + fragment)
    return typeof peer === 'string' ? peer : undefined
  }

  /** Forget an introduction token (and whom it introduces). */
  async removeIntroductionToken(token: string): Promise<void> {
    const fragment = await introductionFragment(base64urlDecode(token, 'token'))
    await this.#storage.batch([
      { type: 'delete', key: SECRET_PREFIX + fragment },
      { type: 'delete', key: PEER_PREFIX + fragment },
    ])
  }

  #put(agent: string, fragment: string, key: Uint8Array, source: 'pinned' | 'introduction') {
    const publicKey = base64urlEncode(key)
    const entry: StoredKey = { agent, fragment, publicKey, source, added: this.#now() }
    return this.#storage.put(keyName(agent, fragment), entry as unknown as JsonValue)
  }

  /** Bind an unbound token to `agent`; false when another peer has it (or it was removed). */
  #bind(fragment: string, agent: string): Promise<boolean> {
    const run = this.#binding.then(async () => {
      if ((await this.#storage.get(SECRET_PREFIX + fragment)) === undefined) return false
      const peer = await this.#storage.get(PEER_PREFIX + fragment)
      if (typeof peer === 'string') return peer === agent
      await this.#storage.put(PEER_PREFIX + fragment, agent)
      return true
    })
    this.#binding = run.catch(() => undefined)
    return run
  }

  /** The kept key a signature names, if any (a {@link KeyResolver}). */
  async resolve(lookup: KeyLookup): Promise<KeyResolution> {
    if (lookup.alg === 'hmac-sha256') {
      const token = await this.#storage.get(SECRET_PREFIX + lookup.fragment)
      if (typeof token !== 'string')
        return { status: 'not_found', reason: `no introduction secret ${lookup.fragment}` }
      const key: ResolvedKey = {
        alg: 'hmac-sha256',
        secret: base64urlDecode(token),
        source: 'shared-secret',
      }
      // Refused for anyone but its peer; an unbound one is bound once it verified (PROFILE §5).
      const peer = await this.#storage.get(PEER_PREFIX + lookup.fragment)
      if (typeof peer === 'string') key.peer = peer
      else key.bind = (agent) => this.#bind(lookup.fragment, agent)
      return { status: 'found', key }
    }
    const stored = (await this.#storage.get(keyName(lookup.agent, lookup.fragment))) as unknown as
      | StoredKey
      | undefined
    if (!stored) return { status: 'not_found', reason: `no stored key ${lookup.keyId}` }
    return {
      status: 'found',
      key: { alg: 'ed25519', publicKey: base64urlDecode(stored.publicKey), source: stored.source },
    }
  }
}

/** The identity document a verified level-0 greeting carries (`{identity}`), if any and valid. */
export function introducedIdentity(message: Message): IdentityDocument | undefined {
  if (message.phase !== 'greeting') return undefined
  for (const part of message.body.parts) {
    if (part.type !== 'data' || typeof part.data !== 'object' || part.data === null) continue
    const data = part.data as Record<string, unknown>
    if (!('identity' in data)) continue
    const doc = validateIdentityDocument(data.identity, { expectedAgentId: message.from.agent })
    if (isDidKey(doc.agent_id)) {
      const didKey = publicKeyFromDidKey(doc.agent_id)
      if (!doc.keys.every((k) => constantTimeEqual(publicKeyOf(k), didKey))) {
        throw invalidFormat(
          "a did:key agent's introduced key must be the DID's key",
          'body.parts.data.identity',
        )
      }
    }
    return doc
  }
  return undefined
}
