/**
 * The agent's own identity: loaded from storage (or created and persisted the first time), the
 * key that signs now, and key rotation and revocation for URL agents (PROFILE §4).
 */
import type { IdentityDocument, JsonValue, KeyPair, Signer, Storage } from '@agentmsg/core'
import {
  AgentMsgError,
  assertRelayUrl,
  base64urlDecode,
  base64urlEncode,
  didKeyFragment,
  didKeyFromPublicKey,
  ed25519Signer,
  generateKeyPair,
  keyPairFromSeed,
  parseAgentId,
} from '@agentmsg/core/http'
import type { AgentOptions, OwnIdentity } from './types.js'

const SELF = 'keys/self/identity'

/** A URL agent's own document is a chunk of its own: a did:key agent never loads it. */
const loadUrlIdentity = () => import('./url-identity.js')

/** What `keys/self/identity` holds: base64url seeds by fragment, `active` the signing one's. */
export interface SelfRecord {
  agentId: string
  active: string
  seeds: Record<string, string>
  document?: IdentityDocument
}

/** Relay URLs, checked, without repeats. */
export function relayList(relays: readonly string[], what: string): string[] {
  return [...new Set(relays.map((r, i) => assertRelayUrl(r, `${what}[${i}]`)))]
}

/** The agent's keys and identity document, as stored, kept in step with storage. */
export class OwnKeys {
  readonly id: string
  readonly #storage: Storage
  readonly #now: () => number
  #self: SelfRecord
  #keys: KeyPair
  #signer: Signer

  /**
   * Signs with whatever key is active at the time of each call: transports keep it across
   * rotations (relay agent auth, PROFILE §9).
   */
  readonly liveSigner: Signer

  private constructor(storage: Storage, now: () => number, self: SelfRecord, keys: KeyPair) {
    this.#storage = storage
    this.#now = now
    this.#self = self
    this.#keys = keys
    this.id = self.agentId
    this.#signer = this.#makeSigner()
    const current = () => this.#signer
    this.liveSigner = {
      alg: 'ed25519',
      get keyId() {
        return current().keyId
      },
      // The mode and the fast UTF-8 encoder pass through, so the agent's own signs get the
      // node provider's inline path when called one at a time (crypto/node-mode.ts).
      sign: (data, mode) => current().sign(data, mode),
      utf8: (text) => current().utf8?.(text) ?? new TextEncoder().encode(text),
    }
  }

  /**
   * The stored identity, or a new one persisted now. A URL agent's stored document follows
   * the configured `relays` (its `relay.urls`).
   */
  static async load(storage: Storage, options: AgentOptions, now: () => number): Promise<OwnKeys> {
    const stored = (await storage.get(SELF)) as unknown as SelfRecord | undefined
    const relays = relayList(options.relays ?? [], 'relays')
    if (stored) {
      const given = options.identity?.agentId
      if (given !== undefined && parseAgentId(given, 'identity.agentId').id !== stored.agentId) {
        throw new TypeError(
          `the storage holds the identity of ${stored.agentId}, not ${given}; use another storage`,
        )
      }
      const seed = stored.seeds[stored.active]
      if (typeof seed !== 'string') throw new TypeError('the stored identity has no active key')
      const own = new OwnKeys(storage, now, stored, await keyPairFromSeed(base64urlDecode(seed)))
      if (stored.document && options.relays !== undefined) {
        const document = (await loadUrlIdentity()).withRelays(stored.document, relays)
        if (document !== stored.document) await own.#save({ ...stored, document })
      }
      return own
    }
    const o = options.identity ?? {}
    if (o.create === false) {
      throw new AgentMsgError('not_found', 'the storage holds no identity (identity.create: false)')
    }
    const keys = o.seed ? await keyPairFromSeed(o.seed) : await generateKeyPair()
    const self =
      o.agentId === undefined
        ? didKeySelf(keys)
        : (await loadUrlIdentity()).urlSelf(o, keys, relays)
    await storage.put(SELF, self as unknown as JsonValue)
    return new OwnKeys(storage, now, self, keys)
  }

  /**
   * The seed of one of this agent's keys by its full key id (`<agent_id>#<fragment>`): the
   * active one or a retired one still kept. Opens parts sealed to it (PROFILE §8).
   */
  seedFor(keyId: string): Uint8Array | undefined {
    const prefix = `${this.id}#`
    if (!keyId.startsWith(prefix)) return undefined
    const seed = this.#self.seeds[keyId.slice(prefix.length)]
    return typeof seed === 'string' ? base64urlDecode(seed) : undefined
  }

  /** Signs with the active key now (a later rotation does not change this signer). */
  get signer(): Signer {
    return this.#signer
  }

  get document(): IdentityDocument | undefined {
    return this.#self.document
  }

  get identity(): OwnIdentity {
    return {
      agentId: this.id,
      publicKey: this.#keys.publicKey,
      keyId: this.#signer.keyId,
      document: this.#self.document,
    }
  }

  /** URL agents: a new active key; the old one is retired (PROFILE §4). */
  async rotate(): Promise<IdentityDocument> {
    if (!this.#self.document) {
      throw new AgentMsgError(
        'forbidden',
        'only URL agents rotate keys; a did:key agent needs a new identity',
      )
    }
    const { self, keys } = await (await loadUrlIdentity()).rotated(this.#self, this.#now())
    await this.#save(self)
    this.#keys = keys
    this.#signer = this.#makeSigner()
    return self.document!
  }

  /** URL agents: revoke a key (by fragment) at once; its seed is forgotten. */
  async revoke(fragment: string): Promise<IdentityDocument> {
    if (!this.#self.document) throw new AgentMsgError('forbidden', 'only URL agents revoke keys')
    if (fragment === this.#self.active) {
      throw new TypeError('rotate first: the active key cannot be revoked')
    }
    const self = (await loadUrlIdentity()).revoked(this.#self, fragment)
    await this.#save(self)
    return self.document!
  }

  async #save(self: SelfRecord): Promise<void> {
    await this.#storage.put(SELF, self as unknown as JsonValue)
    this.#self = self
  }

  #makeSigner(): Signer {
    return ed25519Signer(this.#keys, `${this.id}#${this.#self.active}`)
  }
}

function didKeySelf(keys: KeyPair): SelfRecord {
  const did = didKeyFromPublicKey(keys.publicKey)
  const fragment = didKeyFragment(did)
  return { agentId: did, active: fragment, seeds: { [fragment]: base64urlEncode(keys.secretKey) } }
}
