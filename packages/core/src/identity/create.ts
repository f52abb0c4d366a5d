/** Building identity documents, rotating and revoking their keys (SPEC §2.2–2.4, §3.1). */
import { agentEndpoints, assertRelayUrl, parseAgentId } from '../agent-id.js'
import { base64urlEncode } from '../base64url.js'
import { constantTimeEqual } from '../bytes.js'
import { didKeyFragment, publicKeyFromDidKey } from '../did-key.js'
import { AgentMsgError, invalidFormat } from '../errors.js'
import { formatTimestamp, parseTimestamp } from '../timestamps.js'
import {
  bareFragment,
  type IdentityDocument,
  type IdentityEndpoints,
  type RelayPreference,
  validateIdentityDocument,
} from './document.js'

function requirePublicKey(publicKey: unknown, field: string): Uint8Array {
  if (!(publicKey instanceof Uint8Array) || publicKey.length !== 32) {
    throw invalidFormat('must be a 32-byte Ed25519 public key', field)
  }
  return publicKey
}

// Derived from the key, not counted: a rebuilt document never reuses an id verifiers may have
// cached for an old key, and an unknown id makes them refetch (PROFILE §4).
const defaultKeyId = (publicKey: Uint8Array) => base64urlEncode(publicKey).slice(0, 8)

/** Options for {@link createIdentityDocument}. */
export interface CreateIdentityDocumentOptions {
  agentId: string
  /** @default the agent id */
  display?: string
  publicKey: Uint8Array
  /** Bare fragment. @default did:key: the method-specific id; others: 8 base64url chars of the key */
  keyId?: string
  /** @default now */
  created?: string | number
  /** Required unless a URL agent (whose endpoints are the well-known ones). */
  endpoints?: { inbox: string; capabilities: string }
  /** Normal-form relay base URLs. */
  relays?: string[]
  /** @default 'any' */
  relayPreference?: RelayPreference
}

/** Build an identity document with one active key. */
export function createIdentityDocument(options: CreateIdentityDocumentOptions): IdentityDocument {
  const { kind, id } = parseAgentId(options.agentId, 'agentId')
  const publicKey = requirePublicKey(options.publicKey, 'publicKey')
  let keyId = options.keyId
  if (kind === 'did:key') {
    if (!constantTimeEqual(publicKey, publicKeyFromDidKey(id))) {
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
    const given = options.endpoints
    if (given !== undefined && (given.inbox !== inbox || given.capabilities !== capabilities)) {
      throw invalidFormat(`a URL agent's endpoints are the well-known ones (${inbox})`, 'endpoints')
    }
    endpoints = { inbox, capabilities }
  } else {
    const given = options.endpoints
    if (given === undefined) {
      throw invalidFormat(`are required for a ${kind} agent, which has no base URL`, 'endpoints')
    }
    // Checked with the whole document below.
    endpoints = { inbox: given.inbox, capabilities: given.capabilities }
  }
  const at = options.created
  const created = formatTimestamp(
    typeof at === 'string' ? parseTimestamp(at, 'created') : (at ?? Date.now()),
  )
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
  return validateIdentityDocument(doc)
}

/** A did:key identity is its key: it cannot rotate or revoke (PROFILE §4). */
function refuseDidKey(doc: IdentityDocument, action: string): void {
  if (doc.agent_id.startsWith('did:key:')) {
    throw new AgentMsgError(
      'forbidden',
      `did:key identities cannot ${action}: the key is the identity; create a new did:key identity instead`,
    )
  }
}

/** Rotate to a new key (SPEC §3.1): active keys become `retired` now; a new document. */
export function rotateKey(
  doc: IdentityDocument,
  next: { publicKey: Uint8Array; keyId?: string },
  options: { now?: number } = {},
): IdentityDocument {
  refuseDidKey(doc, 'rotate keys')
  validateIdentityDocument(doc)
  const publicKey = requirePublicKey(next.publicKey, 'publicKey')
  const keyId = bareFragment(next.keyId ?? defaultKeyId(publicKey), 'keyId')
  if (doc.keys.some((k) => k.key_id === keyId)) {
    throw invalidFormat(`key id ${keyId} is already in the document`, 'keyId')
  }
  const encoded = base64urlEncode(publicKey)
  const reused = doc.keys.find((k) => k.type === 'ed25519' && k.public_key === encoded)
  // A retired or revoked key coming back as active would undo its retirement.
  if (reused) {
    throw invalidFormat(`this public key is already listed as ${reused.key_id}`, 'publicKey')
  }
  const now = formatTimestamp(options.now ?? Date.now())
  const out = structuredClone(doc)
  for (const key of out.keys) {
    if (key.type === 'ed25519' && key.status === 'active') {
      key.status = 'retired'
      key.retired_date = now
    }
  }
  out.keys.push({
    key_id: keyId,
    type: 'ed25519',
    public_key: encoded,
    created: now,
    status: 'active',
  })
  return out
}

/** Revoke a key (SPEC §3.1): it stops verifying at once; a new document. */
export function revokeKey(
  doc: IdentityDocument,
  keyId: string,
  _options: { now?: number } = {},
): IdentityDocument {
  refuseDidKey(doc, 'revoke keys')
  const out = structuredClone(doc)
  const key = out.keys.find((k) => k.key_id === keyId)
  if (!key) {
    throw new AgentMsgError(
      'not_found',
      `no key ${keyId} in the identity document of ${doc.agent_id}`,
    )
  }
  key.status = 'revoked'
  return out
}
