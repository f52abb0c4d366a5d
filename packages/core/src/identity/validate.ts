/**
 * Strict validation of identity documents (SPEC §2.2–2.4, PROFILE §4): one code path decides
 * what a valid document is, for documents fetched, received in introductions and built here.
 */
import { agentEndpoints, assertRelayUrl, parseAgentId } from '../agent-id.js'
import { base64urlDecode } from '../base64url.js'
import { didKeyFragment, publicKeyFromDidKey } from '../did-key.js'
import { invalidFormat } from '../errors.js'
import { parseTimestamp } from '../timestamps.js'
import type { IdentityDocument, IdentityKey, KeyStatus } from './document.js'

const STATUSES: ReadonlySet<string> = new Set<KeyStatus>(['active', 'retired', 'revoked'])

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x)
}

/** Byte equality; public keys are not secret, so no constant-time compare is needed. */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

/** Options for {@link validateIdentityDocument}. */
export interface ValidateIdentityDocumentOptions {
  /** The agent whose well-known path served the document: `agent_id` must equal it. */
  expectedAgentId?: string
}

/**
 * Check an identity document strictly (SPEC §2.2–2.4, PROFILE §4) and return it typed. The
 * object is returned as is, unknown members included.
 *
 * Where the spec is silent:
 * - keys of a type other than `ed25519` must still be well-formed key objects (SPEC §2.3, with
 *   `public_key` canonical base64url of any length) and are kept, but never verify anything, so
 *   a document from a newer implementation stays usable for its Ed25519 keys;
 * - several `active` keys are allowed (e.g. one per device); SPEC §3.1 does not forbid it;
 * - a `revoked` key may keep the `retired_date` it had; an `active` one must not have one.
 *
 * @throws AgentMsgError `invalid_format` whose `field` is the path at fault, e.g.
 *   `keys[1].public_key`.
 *
 * @example
 * const doc = validateIdentityDocument(await res.json(), { expectedAgentId: 'https://a.example' })
 */
export function validateIdentityDocument(
  doc: unknown,
  options: ValidateIdentityDocumentOptions = {},
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
  if (typeof doc.display !== 'string') throw invalidFormat('must be a string', 'display')

  const keys = doc.keys
  if (!Array.isArray(keys) || keys.length === 0)
    throw invalidFormat('must be a non-empty array', 'keys')
  const seen = new Set<string>()
  keys.forEach((key, i) => {
    validateKey(key, `keys[${i}]`)
    if (seen.has(key.key_id))
      throw invalidFormat(`duplicate key id ${key.key_id}`, `keys[${i}].key_id`)
    seen.add(key.key_id)
  })
  if (kind === 'did:key') validateDidKeyKeys(id, keys as IdentityKey[])

  const endpoints = doc.endpoints
  if (!isObject(endpoints)) throw invalidFormat('must be an object', 'endpoints')
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
    const relay = doc.relay
    if (!isObject(relay)) throw invalidFormat('must be an object', 'relay')
    if (!Array.isArray(relay.urls)) throw invalidFormat('must be an array', 'relay.urls')
    relay.urls.forEach((u, i) => assertRelayUrl(u, `relay.urls[${i}]`))
    if (relay.preference !== 'any' && relay.preference !== 'ordered') {
      throw invalidFormat("must be 'any' or 'ordered'", 'relay.preference')
    }
  }
  return doc as IdentityDocument
}

function validateKey(key: unknown, field: string): asserts key is IdentityKey {
  if (!isObject(key)) throw invalidFormat('must be an object', field)
  const keyId = key.key_id
  if (typeof keyId !== 'string' || keyId === '' || keyId.includes('#')) {
    throw invalidFormat('must be a non-empty bare fragment (no #)', `${field}.key_id`)
  }
  if (typeof key.type !== 'string' || key.type === '') {
    throw invalidFormat('must be a non-empty string', `${field}.type`)
  }
  if (typeof key.public_key !== 'string')
    throw invalidFormat('must be a string', `${field}.public_key`)
  const bytes = base64urlDecode(key.public_key, `${field}.public_key`)
  if (key.type === 'ed25519' && bytes.length !== 32) {
    throw invalidFormat('an ed25519 public key is 32 bytes', `${field}.public_key`)
  }
  if (typeof key.created !== 'string') throw invalidFormat('must be a string', `${field}.created`)
  parseTimestamp(key.created, `${field}.created`)
  const status = key.status
  if (typeof status !== 'string' || !STATUSES.has(status)) {
    throw invalidFormat("must be 'active', 'retired' or 'revoked'", `${field}.status`)
  }
  const retired = key.retired_date
  if (retired === undefined) {
    if (status === 'retired')
      throw invalidFormat('is required for a retired key', `${field}.retired_date`)
  } else {
    if (status === 'active') {
      throw invalidFormat('must be absent on an active key', `${field}.retired_date`)
    }
    if (typeof retired !== 'string')
      throw invalidFormat('must be a string', `${field}.retired_date`)
    parseTimestamp(retired, `${field}.retired_date`)
  }
}

/** PROFILE §4: a did:key agent has exactly one key, the DID's own, which is always active. */
function validateDidKeyKeys(did: string, keys: IdentityKey[]): void {
  if (keys.length !== 1) throw invalidFormat('a did:key agent has exactly one key', 'keys')
  const key = keys[0]!
  if (key.type !== 'ed25519')
    throw invalidFormat("must be 'ed25519' for a did:key agent", 'keys[0].type')
  const fragment = didKeyFragment(did)
  if (key.key_id !== fragment) {
    throw invalidFormat(`must be ${fragment}, the did:key's method-specific id`, 'keys[0].key_id')
  }
  if (!sameBytes(base64urlDecode(key.public_key), publicKeyFromDidKey(did))) {
    throw invalidFormat("must be the did:key's own public key", 'keys[0].public_key')
  }
  if (key.status !== 'active') {
    throw invalidFormat('a did:key key cannot be retired or revoked', 'keys[0].status')
  }
}
