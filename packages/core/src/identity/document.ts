// Identity documents (SPEC §2.2–2.4, PROFILE §4) and their one strict validation; unknown members
// are kept, so a newer implementation's document survives a round trip.
import { agentEndpoints, assertRelayUrl, parseAgentId } from '../agent-id.js'
import { base64urlDecode } from '../base64url.js'
import { constantTimeEqual } from '../bytes.js'
import { didKeyFragment, publicKeyFromDidKey } from '../did-key.js'
import { invalidFormat } from '../errors.js'
import { requireArray, requireObject, requireString } from '../message.js'
import { parseTimestamp } from '../timestamps.js'
import { isObject } from '../types.js'

export type KeyStatus = 'active' | 'retired' | 'revoked'

/** A key object (SPEC §2.3); `key_id` is the bare fragment of `<agent_id>#<key_id>`. */
export interface IdentityKey {
  key_id: string
  // `string & {}` keeps the 'ed25519' completion while admitting the types of future versions.
  type: 'ed25519' | (string & {})
  public_key: string
  created: string
  status: KeyStatus
  /** Required for `retired` keys, may stay on `revoked` ones, absent on `active` ones. */
  retired_date?: string
  [extension: string]: unknown
}

export interface IdentityEndpoints {
  inbox: string
  capabilities: string
  [extension: string]: unknown
}

/** How senders choose among an agent's relays (SPEC §2.8, PROFILE §4). */
export type RelayPreference = 'any' | 'ordered'

/** An identity document (SPEC §2.2, PROFILE §4). */
export interface IdentityDocument {
  /** The document format's version. */
  agentmsg: 5
  /** Whose document it is; fetched from a URL agent, it must equal that id. */
  agent_id: string
  /** A human-readable name. */
  display: string
  /** Its keys with their status; `key_id` is the bare fragment. */
  keys: IdentityKey[]
  /** Where its inbox and capabilities are. */
  endpoints: IdentityEndpoints
  /** The relays it listens on (`urls`), tried in order or any (`preference`). */
  relay?: { urls: string[]; preference: RelayPreference; [extension: string]: unknown }
  [extension: string]: unknown
}

const STATUSES: ReadonlySet<unknown> = new Set<KeyStatus>(['active', 'retired', 'revoked'])

/**
 * Check an identity document strictly. Where the spec is silent: other key types are kept but
 * never verify; several `active` keys are allowed; a `revoked` key may keep its `retired_date`.
 */
export function validateIdentityDocument(
  doc: unknown,
  options: { expectedAgentId?: string } = {},
): IdentityDocument {
  if (!isObject(doc)) throw invalidFormat('an identity document must be a JSON object')
  if (doc.agentmsg !== 5) throw invalidFormat('must be the integer 5', 'agentmsg')
  const { kind, id } = parseAgentId(doc.agent_id, 'agent_id')
  if (options.expectedAgentId !== undefined && id !== options.expectedAgentId) {
    throw invalidFormat(
      `must be ${options.expectedAgentId}, the agent the document is for`,
      'agent_id',
    )
  }
  requireString(doc.display, 'display')
  const keys = doc.keys
  if (!Array.isArray(keys) || keys.length === 0) {
    throw invalidFormat('must be a non-empty array', 'keys')
  }
  const seen = new Set<string>()
  keys.forEach((key, i) => {
    validateKey(key, `keys[${i}]`)
    if (seen.has(key.key_id)) {
      throw invalidFormat(`duplicate key id ${key.key_id}`, `keys[${i}].key_id`)
    }
    seen.add(key.key_id)
  })
  if (kind === 'did:key') validateDidKeyKeys(id, keys as IdentityKey[])
  const endpoints = requireObject(doc.endpoints, 'endpoints')
  if (kind === 'url') {
    const expected = agentEndpoints(id)
    for (const name of ['inbox', 'capabilities'] as const) {
      if (endpoints[name] !== expected[name]) {
        throw invalidFormat(`must be ${expected[name]} for a URL agent`, `endpoints.${name}`)
      }
    }
  } else {
    assertRelayUrl(endpoints.inbox, 'endpoints.inbox')
    assertRelayUrl(endpoints.capabilities, 'endpoints.capabilities')
  }
  if (doc.relay !== undefined) {
    const relay = requireObject(doc.relay, 'relay')
    requireArray(relay.urls, 'relay.urls').forEach((u, i) => assertRelayUrl(u, `relay.urls[${i}]`))
    if (relay.preference !== 'any' && relay.preference !== 'ordered') {
      throw invalidFormat("must be 'any' or 'ordered'", 'relay.preference')
    }
  }
  return doc as IdentityDocument
}

/** A key id as a document holds it: a non-empty fragment without `#`. */
export function bareFragment(keyId: unknown, field: string): string {
  if (typeof keyId !== 'string' || keyId === '' || keyId.includes('#')) {
    throw invalidFormat('must be a non-empty bare fragment (no #)', field)
  }
  return keyId
}

function validateKey(value: unknown, field: string): asserts value is IdentityKey {
  const key = requireObject(value, field)
  bareFragment(key.key_id, `${field}.key_id`)
  if (typeof key.type !== 'string' || key.type === '') {
    throw invalidFormat('must be a non-empty string', `${field}.type`)
  }
  const string = (name: string) => requireString(key[name], `${field}.${name}`)
  const bytes = base64urlDecode(string('public_key'), `${field}.public_key`)
  if (key.type === 'ed25519' && bytes.length !== 32) {
    throw invalidFormat('an ed25519 public key is 32 bytes', `${field}.public_key`)
  }
  parseTimestamp(string('created'), `${field}.created`)
  const status = key.status
  if (typeof status !== 'string' || !STATUSES.has(status)) {
    throw invalidFormat("must be 'active', 'retired' or 'revoked'", `${field}.status`)
  }
  if (key.retired_date === undefined) {
    if (status === 'retired') {
      throw invalidFormat('is required for a retired key', `${field}.retired_date`)
    }
  } else {
    if (status === 'active') {
      throw invalidFormat('must be absent on an active key', `${field}.retired_date`)
    }
    parseTimestamp(string('retired_date'), `${field}.retired_date`)
  }
}

/** PROFILE §4: a did:key agent has exactly one key, the DID's own, always active. */
function validateDidKeyKeys(did: string, keys: IdentityKey[]): void {
  if (keys.length !== 1) throw invalidFormat('a did:key agent has exactly one key', 'keys')
  const key = keys[0]!
  if (key.type !== 'ed25519') {
    throw invalidFormat("must be 'ed25519' for a did:key agent", 'keys[0].type')
  }
  const fragment = didKeyFragment(did)
  if (key.key_id !== fragment) {
    throw invalidFormat(`must be ${fragment}, the did:key's method-specific id`, 'keys[0].key_id')
  }
  if (!constantTimeEqual(base64urlDecode(key.public_key), publicKeyFromDidKey(did))) {
    throw invalidFormat("must be the did:key's own public key", 'keys[0].public_key')
  }
  if (key.status !== 'active') {
    throw invalidFormat('a did:key key cannot be retired or revoked', 'keys[0].status')
  }
}

export function publicKeyOf(key: IdentityKey): Uint8Array {
  if (key.type !== 'ed25519') throw invalidFormat(`a ${key.type} key is not an ed25519 key`, 'type')
  const bytes = base64urlDecode(key.public_key, 'public_key')
  if (bytes.length !== 32) throw invalidFormat('an ed25519 public key is 32 bytes', 'public_key')
  return bytes
}
