/**
 * Identity documents (SPEC §2.2–2.4, §3.1, PROFILE §4): building, strict validation, key
 * rotation and revocation, and the retired-key bounds a verifier applies.
 *
 * Everything here is a pure function of its inputs (the clock is a parameter), so verifiers on
 * different machines reach the same verdict for the same document and signature.
 */
import { agentEndpoints, assertRelayUrl, parseAgentId } from './agent-id.js'
import { base64urlDecode, base64urlEncode } from './base64url.js'
import { didKeyFragment, publicKeyFromDidKey } from './did-key.js'
import { AgentMsgError, invalidFormat } from './errors.js'
import { formatTimestamp, parseTimestamp } from './timestamps.js'

/** Key status (SPEC §3.1). */
export type KeyStatus = 'active' | 'retired' | 'revoked'

/**
 * A key object (SPEC §2.3). `key_id` is the bare fragment: the full key id is
 * `<agent_id>#<key_id>`. Keys of a type other than `ed25519` are kept by
 * {@link validateIdentityDocument} but never used to verify (see there).
 */
export interface IdentityKey {
  key_id: string
  // `string & {}` keeps the 'ed25519' completion while admitting the types of future versions.
  type: 'ed25519' | (string & {})
  /** base64url (no padding) of the raw public key: 32 bytes for `ed25519`. */
  public_key: string
  created: string
  status: KeyStatus
  /** Required for `retired` keys, may stay on `revoked` ones, absent on `active` ones. */
  retired_date?: string
  [extension: string]: unknown
}

/** The endpoints object (SPEC §2.4). */
export interface IdentityEndpoints {
  inbox: string
  capabilities: string
  [extension: string]: unknown
}

/** How senders choose among an agent's relays (SPEC §2.8, PROFILE §4). */
export type RelayPreference = 'any' | 'ordered'

/** An identity document (SPEC §2.2, PROFILE §4). Unknown members are kept. */
export interface IdentityDocument {
  agentmsg: 5
  agent_id: string
  display: string
  keys: IdentityKey[]
  endpoints: IdentityEndpoints
  relay?: { urls: string[]; preference: RelayPreference; [extension: string]: unknown }
  [extension: string]: unknown
}

/** PROFILE §4 default transition period of a retired key: 14 days, covering 8 days in flight. */
export const DEFAULT_TRANSITION_MS = 14 * 24 * 60 * 60 * 1000

/** A retired key still verifies signatures `created` up to 5 minutes after `retired_date`. */
export const RETIRED_KEY_CREATED_SLACK_MS = 5 * 60 * 1000

const STATUSES: ReadonlySet<string> = new Set<KeyStatus>(['active', 'retired', 'revoked'])

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x)
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

function requirePublicKey(publicKey: unknown, field: string): Uint8Array {
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
function defaultKeyId(publicKey: Uint8Array): string {
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

function refuseDidKey(doc: IdentityDocument, action: string): void {
  if (doc.agent_id.startsWith('did:key:')) {
    throw new AgentMsgError(
      'forbidden',
      `did:key identities cannot ${action}: the key is the identity; create a new did:key identity instead`,
    )
  }
}

/** Options for {@link rotateKey} and {@link revokeKey}. */
export interface KeyChangeOptions {
  /** Epoch ms used for `created` / `retired_date`. @default Date.now() */
  now?: number
}

/**
 * Rotate to a new key (SPEC §3.1): every active `ed25519` key becomes `retired` with
 * `retired_date` = now, and the new key is added as `active` with `created` = now. Returns a new
 * document; the input is not modified.
 *
 * @param next.keyId - bare fragment; defaults to the first 8 base64url characters of the key.
 * @throws AgentMsgError `forbidden` for a did:key document (rotation means a new identity);
 *   `invalid_format` for an invalid document, a duplicate key id or a key already listed.
 *
 * @example
 * const next = rotateKey(doc, { publicKey: newPublicKey, keyId: 'k2' })
 */
export function rotateKey(
  doc: IdentityDocument,
  next: { publicKey: Uint8Array; keyId?: string },
  options: KeyChangeOptions = {},
): IdentityDocument {
  refuseDidKey(doc, 'rotate keys')
  validateIdentityDocument(doc)
  const publicKey = requirePublicKey(next.publicKey, 'publicKey')
  const keyId = next.keyId ?? defaultKeyId(publicKey)
  if (typeof keyId !== 'string' || keyId === '' || keyId.includes('#')) {
    throw invalidFormat('must be a non-empty bare fragment (no #)', 'keyId')
  }
  if (doc.keys.some((k) => k.key_id === keyId)) {
    throw invalidFormat(`key id ${keyId} is already in the document`, 'keyId')
  }
  const encoded = base64urlEncode(publicKey)
  const reused = doc.keys.find((k) => k.type === 'ed25519' && k.public_key === encoded)
  // A retired or revoked key coming back as active would undo its retirement.
  if (reused)
    throw invalidFormat(`this public key is already listed as ${reused.key_id}`, 'publicKey')

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

/**
 * Revoke a key, e.g. one that may be compromised (SPEC §3.1): it stops verifying at once,
 * without a transition period. A `retired_date` it had is kept. Returns a new document.
 *
 * @param options - accepted for symmetry with {@link rotateKey}; SPEC §2.3 defines no
 *   revocation date, so nothing is stamped.
 * @throws AgentMsgError `forbidden` for a did:key document, `not_found` for an unknown key id.
 *
 * @example
 * const safe = revokeKey(doc, 'k1')
 */
export function revokeKey(
  doc: IdentityDocument,
  keyId: string,
  options: KeyChangeOptions = {},
): IdentityDocument {
  void options
  refuseDidKey(doc, 'revoke keys')
  const out = structuredClone(doc)
  const key = out.keys.find((k) => k.key_id === keyId)
  if (!key)
    throw new AgentMsgError(
      'not_found',
      `no key ${keyId} in the identity document of ${doc.agent_id}`,
    )
  key.status = 'revoked'
  return out
}

/** Result of {@link checkKeyUsable}. */
export type KeyUsability =
  | { ok: true; key: IdentityKey }
  | { ok: false; code: 'key_revoked' | 'unknown_sender'; message: string }

/** Options for {@link checkKeyUsable}. */
export interface CheckKeyUsableOptions {
  /** How long after `retired_date` a retired key still verifies. @default DEFAULT_TRANSITION_MS */
  transitionMs?: number
}

function describeDuration(ms: number): string {
  const units: [number, string][] = [
    [86_400_000, 'day'],
    [3_600_000, 'hour'],
    [60_000, 'minute'],
    [1000, 'second'],
  ]
  for (const [size, name] of units) if (ms > 0 && ms % size === 0) return `${ms / size}-${name}`
  return `${ms} ms`
}

/** A timestamp for a message, which must not throw on times the wire format cannot write. */
function describeTime(ms: number): string {
  try {
    return formatTimestamp(ms)
  } catch {
    return `${ms} ms after 1970`
  }
}

/**
 * May the key `keyFragment` of `doc` verify a signature whose `created` is `signatureCreated`,
 * at time `now` (PROFILE §4)? Active keys: yes. Retired keys: only when `created` ≤
 * `retired_date` + 5 minutes and `now` ≤ `retired_date` + the transition period. Revoked keys
 * and retired ones outside those bounds: `key_revoked`, with a message for the error reply
 * (SPEC §3.1). A key the document does not list, or whose type is not `ed25519`:
 * `unknown_sender`.
 *
 * Pass a document that went through {@link validateIdentityDocument}.
 *
 * @example
 * const r = checkKeyUsable(doc, 'k1', Date.parse(sig.created), Date.now())
 * if (!r.ok) throw new AgentMsgError(r.code, r.message)
 */
export function checkKeyUsable(
  doc: IdentityDocument,
  keyFragment: string,
  signatureCreated: number,
  now: number,
  options: CheckKeyUsableOptions = {},
): KeyUsability {
  const transitionMs = options.transitionMs ?? DEFAULT_TRANSITION_MS
  if (!Number.isFinite(transitionMs) || transitionMs < 0) {
    throw new RangeError('transitionMs must be a finite number of milliseconds ≥ 0')
  }
  // NaN compares false with everything, so it would slip through the bounds below.
  if (!Number.isFinite(signatureCreated) || !Number.isFinite(now)) {
    throw new RangeError('signatureCreated and now must be finite epoch milliseconds')
  }
  const name = `key ${keyFragment} of ${doc.agent_id}`
  const index = doc.keys.findIndex((k) => k.key_id === keyFragment)
  const key = doc.keys[index]
  if (!key) {
    return { ok: false, code: 'unknown_sender', message: `${name} is not in its identity document` }
  }
  if (key.type !== 'ed25519') {
    return {
      ok: false,
      code: 'unknown_sender',
      message: `${name} is a ${key.type} key, not ed25519`,
    }
  }
  if (key.status === 'active') return { ok: true, key }
  if (key.status === 'retired') {
    const retiredAt = parseTimestamp(key.retired_date as string, `keys[${index}].retired_date`)
    const retired = describeTime(retiredAt)
    const ended = retiredAt + transitionMs
    if (now > ended) {
      const period = describeDuration(transitionMs)
      return {
        ok: false,
        code: 'key_revoked',
        message: `${name} was retired at ${retired} and its ${period} transition period ended at ${describeTime(ended)}`,
      }
    }
    if (signatureCreated > retiredAt + RETIRED_KEY_CREATED_SLACK_MS) {
      return {
        ok: false,
        code: 'key_revoked',
        message: `signature created at ${describeTime(signatureCreated)}, more than 5 minutes after ${name} was retired at ${retired}`,
      }
    }
    return { ok: true, key }
  }
  return { ok: false, code: 'key_revoked', message: `${name} was revoked` }
}

/**
 * The raw public key of a key object.
 *
 * @throws AgentMsgError `invalid_format` when `public_key` is not canonical base64url of 32
 *   bytes, or the key is not an `ed25519` key.
 *
 * @example
 * const pk = publicKeyOf(doc.keys[0]) // Uint8Array(32)
 */
export function publicKeyOf(key: IdentityKey): Uint8Array {
  if (key.type !== 'ed25519') throw invalidFormat(`a ${key.type} key is not an ed25519 key`, 'type')
  const bytes = base64urlDecode(key.public_key, 'public_key')
  if (bytes.length !== 32) throw invalidFormat('an ed25519 public key is 32 bytes', 'public_key')
  return bytes
}
