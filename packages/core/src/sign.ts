import { splitKeyId } from './agent-id.js'
import { base64urlEncode } from './base64url.js'
import { utf8Encode } from './bytes.js'
import { type CryptoMode, callEnded, callStarted } from './crypto/provider.js'
import { AgentMsgError, invalidFormat } from './errors.js'
import { canonicalize } from './jcs.js'
import type { Signer } from './keys.js'
import { validateMessage } from './message.js'
import { signedLines } from './signing-input.js'
import { formatTimestamp } from './timestamps.js'
import type { JsonValue, Message, SignatureObject, UnsignedMessage } from './types.js'

/** Top-level members a signature never lists in `signed_headers` (PROFILE §3). */
const UNSIGNED_MEMBERS: ReadonlySet<string> = new Set(['body', 'security', 'trace'])

/** The order writers list the standard members in; any others follow in code-unit order. */
const HEADER_ORDER = [
  'version',
  'message_id',
  'date',
  'from',
  'to',
  'conversation_id',
  'sequence',
  'phase',
  'content_type',
  'ttl_seconds',
  'auth_level',
]

/** The top-level members every signature covers (PROFILE §3). */
export const signedMembers = (message: Record<string, unknown>): string[] =>
  Object.keys(message).filter((k) => !UNSIGNED_MEMBERS.has(k) && message[k] !== undefined)

/** {@link signedMembers} in the order writers list them. */
function requiredSignedHeaders(message: Record<string, unknown>): string[] {
  const present = signedMembers(message)
  const known = HEADER_ORDER.filter((k) => present.includes(k))
  const extra = present.filter((k) => !HEADER_ORDER.includes(k)).sort()
  return [...known, ...extra]
}

/** Options for {@link signMessage}. */
export interface SignOptions {
  /** The signature's `created` time (ms or a timestamp string). @default now */
  created?: number | string
  /** Extension members to bind into the signature object (they are covered, PROFILE §3). */
  extensions?: Record<string, JsonValue>
  /**
   * Where the signing runs, for signers that have the choice (the Node provider): `inline`,
   * `pool` or `auto` (inline when this is the only signMessage / verifyMessage in flight and
   * the event loop is not busy with other work). A server signing per request passes `pool`.
   * @default 'auto'
   */
  crypto?: CryptoMode
}

// formatTimestamp(Date.now()) for each of many signatures a millisecond: the last one is kept.
let lastCreatedMs = Number.NaN
let lastCreated = ''

function createdTimestamp(ms: number): string {
  if (ms !== lastCreatedMs) {
    lastCreated = formatTimestamp(ms)
    lastCreatedMs = ms
  }
  return lastCreated
}

/** Throw unless `keyId` belongs to `from` (PROFILE §3). */
function checkKeyId(keyId: string, from: string): void {
  const { agent } = splitKeyId(keyId, 'key_id')
  if (agent !== from) {
    throw new AgentMsgError(
      'invalid_signature',
      `key_id ${keyId} does not belong to from.agent ${from}`,
      { field: 'key_id' },
    )
  }
}

/**
 * Sign a message (PROFILE §3) and return a new message with the signature appended to
 * `security.signatures`; the input is not modified. Pass several signers to sign with each,
 * e.g. an Ed25519 key and an introduction token for a level-0 greeting.
 *
 * @example
 * const signed = await signMessage(message, ed25519Signer(keys))
 */
export async function signMessage(
  message: UnsignedMessage | Message,
  signer: Signer | readonly Signer[],
  options: SignOptions = {},
): Promise<Message> {
  callStarted()
  try {
    const { message: valid } = validateMessage(message)
    const signers = Array.isArray(signer) ? signer : [signer as Signer]
    if (signers.length === 0) throw new TypeError('signMessage needs at least one signer')
    const from = valid.from.agent
    const created =
      typeof options.created === 'string'
        ? options.created
        : options.created == null
          ? createdTimestamp(Date.now())
          : formatTimestamp(options.created)
    const record = valid as unknown as Record<string, unknown>
    const signedHeaders = requiredSignedHeaders(record)
    for (const s of signers) checkKeyId(s.keyId, from)
    const lines = signedLines(record, signedHeaders, true)

    const signOne = async (s: Signer): Promise<SignatureObject> => {
      const params = {
        ...options.extensions,
        alg: s.alg,
        key_id: s.keyId,
        created,
        signed_headers: signedHeaders,
        signed_body: true,
      }
      const text = lines + canonicalize(params)
      const input = s.utf8 ? s.utf8(text) : utf8Encode(text)
      const sig = await s.sign(input, options.crypto ?? 'auto')
      return { ...params, sig: base64urlEncode(sig) } as SignatureObject
    }
    const signatures =
      signers.length === 1 ? [await signOne(signers[0]!)] : await Promise.all(signers.map(signOne))

    const existing = valid.security?.signatures ?? []
    if ('sig' in (options.extensions ?? {}))
      throw invalidFormat('extensions cannot set sig', 'extensions')
    return {
      ...valid,
      security: { ...valid.security, signatures: [...existing, ...signatures] },
    } as Message
  } finally {
    callEnded()
  }
}
