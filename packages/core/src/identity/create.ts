/** Building a new identity document with one active key (SPEC §2.2–2.4, PROFILE §4). */
import { agentEndpoints, assertRelayUrl, parseAgentId } from '../agent-id.js'
import { base64urlEncode } from '../base64url.js'
import { didKeyFragment, publicKeyFromDidKey } from '../did-key.js'
import { invalidFormat } from '../errors.js'
import { formatTimestamp, parseTimestamp } from '../timestamps.js'
import type { IdentityDocument, IdentityEndpoints, RelayPreference } from './document.js'
import { sameBytes, validateIdentityDocument } from './validate.js'

/** The 32-byte Ed25519 public key an option carries, or `invalid_format` naming the option. */
export function requirePublicKey(publicKey: unknown, field: string): Uint8Array {
  if (!(publicKey instanceof Uint8Array) || publicKey.length !== 32) {
    throw invalidFormat('must be a 32-byte Ed25519 public key', field)
  }
  return publicKey
}

/**
 * Default `key_id` for URL and simple-name agents: the first 8 base64url characters (48 bits) of
 * the public key. Deriving it from the key, rather than counting `k1`, `k2`…, means a document
 * rebuilt from scratch with a new key never reuses an id that verifiers may still have cached
 * for the old key; an unknown id makes them refetch instead (PROFILE §4).
 */
export function defaultKeyId(publicKey: Uint8Array): string {
  return base64urlEncode(publicKey).slice(0, 8)
}

/** Options for {@link createIdentityDocument}. */
export interface CreateIdentityDocumentOptions {
  /** A URL, did:key or (for experiments) simple-name agent id in normal form. */
  agentId: string
  /** @default the agent id */
  display?: string
  /** The first key, active. For a did:key agent it must be the DID's own key. */
  publicKey: Uint8Array
  /**
   * Bare fragment. did:key agents: must be the method-specific id (the default). Others: the
   * default is the first 8 base64url characters of the public key.
   */
  keyId?: string
  /** @default now */
  created?: string | number
  /**
   * URL agents: may be omitted; if given it must equal the well-known endpoints (PROFILE §4).
   * did:key and simple-name agents: required, since they have no base URL to derive them from.
   */
  endpoints?: { inbox: string; capabilities: string }
  /** Normal-form relay base URLs; the `relay` member is written only when this is non-empty. */
  relays?: string[]
  /** @default 'any' */
  relayPreference?: RelayPreference
}

/**
 * Build an identity document with one active key.
 *
 * URL agents get their well-known endpoints. did:key and simple-name agents have no base URL,
 * so the caller passes `endpoints` (any normal-form https URLs); inventing them, or leaving the
 * member out, would produce documents other implementations refuse, since SPEC §2.2 lists
 * `endpoints` as a field of every document.
 *
 * @throws AgentMsgError `invalid_format` naming the option at fault.
 *
 * @example
 * const doc = createIdentityDocument({ agentId: 'https://a.example', publicKey, display: 'Alice' })
 * doc.endpoints.inbox // 'https://a.example/.well-known/agentmsg/inbox'
 */
export function createIdentityDocument(options: CreateIdentityDocumentOptions): IdentityDocument {
  const { kind, id } = parseAgentId(options.agentId, 'agentId')
  const publicKey = requirePublicKey(options.publicKey, 'publicKey')
  let keyId = options.keyId
  if (kind === 'did:key') {
    if (!sameBytes(publicKey, publicKeyFromDidKey(id))) {
      throw invalidFormat("must be the did:key's own public key", 'publicKey')
    }
    const fragment = didKeyFragment(id)
    if (keyId !== undefined && keyId !== fragment) {
      throw invalidFormat(`a did:key agent's key id is its method-specific id ${fragment}`, 'keyId')
    }
    keyId = fragment
  }
  keyId ??= defaultKeyId(publicKey)

  let endpoints: IdentityEndpoints
  if (kind === 'url') {
    const { inbox, capabilities } = agentEndpoints(id)
    if (
      options.endpoints !== undefined &&
      (options.endpoints.inbox !== inbox || options.endpoints.capabilities !== capabilities)
    ) {
      throw invalidFormat(`a URL agent's endpoints are the well-known ones (${inbox})`, 'endpoints')
    }
    endpoints = { inbox, capabilities }
  } else {
    if (options.endpoints === undefined) {
      throw invalidFormat(`are required for a ${kind} agent, which has no base URL`, 'endpoints')
    }
    endpoints = {
      inbox: assertRelayUrl(options.endpoints.inbox, 'endpoints.inbox'),
      capabilities: assertRelayUrl(options.endpoints.capabilities, 'endpoints.capabilities'),
    }
  }

  const created =
    typeof options.created === 'string'
      ? formatTimestamp(parseTimestamp(options.created, 'created'))
      : formatTimestamp(options.created ?? Date.now())
  const doc: IdentityDocument = {
    agentmsg: 5,
    agent_id: id,
    display: options.display ?? id,
    keys: [
      {
        key_id: keyId,
        type: 'ed25519',
        public_key: base64urlEncode(publicKey),
        created,
        status: 'active',
      },
    ],
    endpoints,
  }
  if (options.relays !== undefined && options.relays.length > 0) {
    doc.relay = {
      urls: options.relays.map((u, i) => assertRelayUrl(u, `relays[${i}]`)),
      preference: options.relayPreference ?? 'any',
    }
  }
  // One code path decides what a valid document is; building reuses it.
  return validateIdentityDocument(doc)
}
