/**
 * The shape of an identity document (SPEC §2.2–2.4, PROFILE §4). Unknown members are kept
 * everywhere, so a document written by a newer implementation survives a round trip.
 */

/** Key status (SPEC §3.1). */
export type KeyStatus = 'active' | 'retired' | 'revoked'

/**
 * A key object (SPEC §2.3). `key_id` is the bare fragment: the full key id is
 * `<agent_id>#<key_id>`. Keys of a type other than `ed25519` are kept by
 * `validateIdentityDocument` but never used to verify (see there).
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
