/** The PROFILE §3 rules a signature object must meet before its key is looked up. */
import { keyIdParts } from './agent-id.js'
import { base64urlDecode } from './base64url.js'
import { DID_KEY_PREFIX } from './did-key.js'
import { AgentMsgError } from './errors.js'
import { PROFILE } from './profile.js'
import type { KeyLookup } from './resolver.js'
import { signedMembers } from './sign.js'
import { parseTimestamp } from './timestamps.js'
import type { Message, SignatureAlg } from './types.js'

const INTRO_FRAGMENT_RE = /^intro-[A-Za-z0-9_-]{16}$/
const SIG_BYTES: Record<SignatureAlg, number> = { ed25519: 64, 'hmac-sha256': 32 }

/** A signature that passed the PROFILE §3 rules, with what its verification needs. */
export interface Candidate {
  index: number
  sig: Record<string, unknown> & { alg: SignatureAlg; key_id: string; signed_headers: string[] }
  lookup: KeyLookup
  created: number
  sigBytes: Uint8Array
}

export const refuse = (message: string, field: string) =>
  new AgentMsgError('invalid_signature', message, { field })

/** A signature's bytes: canonical unpadded base64url of `length` bytes, else `fail`. */
export function decodeSig(sig: string, length: number, fail: (m: string) => Error): Uint8Array {
  let bytes: Uint8Array
  try {
    bytes = base64urlDecode(sig)
  } catch {
    throw fail('sig must be canonical unpadded base64url')
  }
  if (bytes.length !== length) throw fail(`sig must be ${length} bytes`)
  return bytes
}

function usable(
  raw: Record<string, unknown>,
  index: number,
  message: Message,
  required: Set<string>,
  now: number,
): Candidate {
  const field = `security.signatures[${index}]`
  const alg = raw.alg as SignatureAlg
  if (raw.signed_body !== true) throw refuse('signed_body must be true', `${field}.signed_body`)
  const headers = raw.signed_headers
  if (!Array.isArray(headers) || headers.some((h) => typeof h !== 'string')) {
    throw refuse('signed_headers must be an array of strings', `${field}.signed_headers`)
  }
  const named = new Set<string>(headers as string[])
  if (named.size !== headers.length)
    throw refuse('signed_headers names a member twice', `${field}.signed_headers`)
  for (const name of named) {
    if (!required.has(name)) {
      throw refuse(
        `signed_headers names "${name}", which is absent or never signed`,
        `${field}.signed_headers`,
      )
    }
  }
  if (named.size !== required.size) {
    const missing = [...required].filter((n) => !named.has(n))
    throw refuse(`signed_headers does not cover ${missing.join(', ')}`, `${field}.signed_headers`)
  }

  const keyId = raw.key_id
  if (typeof keyId !== 'string') throw refuse('key_id must be a string', `${field}.key_id`)
  const parts = keyIdParts(keyId)
  if (!parts) throw refuse('key_id must be <agent_id>#<fragment>', `${field}.key_id`)
  const { agent, fragment } = parts
  if (agent !== message.from.agent) {
    throw refuse(
      `key_id belongs to ${agent}, not to from.agent ${message.from.agent}`,
      `${field}.key_id`,
    )
  }
  // `agent` is from.agent, which validateMessage held to a well-formed did:key if it is one.
  const didKey = agent.startsWith(DID_KEY_PREFIX)
  if (alg === 'ed25519' && didKey && fragment !== agent.slice(DID_KEY_PREFIX.length)) {
    throw refuse(
      "a did:key signature's key_id fragment is the DID's method-specific id",
      `${field}.key_id`,
    )
  }
  if (alg === 'hmac-sha256' && !INTRO_FRAGMENT_RE.test(fragment)) {
    throw refuse('an hmac-sha256 key_id uses the introduction fragment intro-…', `${field}.key_id`)
  }

  let created: number
  try {
    created = parseTimestamp(raw.created as string, `${field}.created`)
  } catch {
    throw refuse('created must be an RFC 3339 UTC timestamp', `${field}.created`)
  }
  if (created > now + PROFILE.clockSkewMs)
    throw refuse('created is more than 5 minutes in the future', `${field}.created`)

  if (typeof raw.sig !== 'string') throw refuse('sig must be a string', `${field}.sig`)
  const sigBytes = decodeSig(raw.sig, SIG_BYTES[alg], (m) => refuse(m, `${field}.sig`))

  return {
    index,
    sig: raw as Candidate['sig'],
    lookup: { keyId, agent, fragment, alg },
    created,
    sigBytes,
  }
}

/** The usable signatures of `msg` (PROFILE §3), unknown algorithms set aside. */
export function candidatesOf(msg: Message, now: number): Candidate[] {
  const sigs = msg.security?.signatures
  if (!sigs || sigs.length === 0) throw refuse('the message is unsigned', 'security.signatures')
  const required = new Set(signedMembers(msg as unknown as Record<string, unknown>))
  const candidates: Candidate[] = []
  for (let i = 0; i < sigs.length; i++) {
    const raw = sigs[i] as unknown as Record<string, unknown>
    // Unknown algorithms are set aside before any other rule applies (PROFILE §3).
    if (raw.alg !== 'ed25519' && raw.alg !== 'hmac-sha256') continue
    candidates.push(usable(raw, i, msg, required, now))
  }
  if (candidates.length === 0)
    throw refuse('no signature with a supported algorithm', 'security.signatures')
  return candidates
}
