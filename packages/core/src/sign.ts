import { splitKeyId } from './agent-id.js'
import { base64urlEncode } from './base64url.js'
import { utf8Encode } from './bytes.js'
import { type CryptoMode, callEnded, callStarted } from './crypto/provider.js'
import { AgentMsgError, invalidFormat } from './errors.js'
import { canonicalize, canonicalizeWithout } from './jcs.js'
import type { Signer } from './keys.js'
import { validateMessage } from './message.js'
import { formatTimestamp } from './timestamps.js'
import type { JsonValue, Message, SignatureObject, UnsignedMessage } from './types.js'

/** The PROFILE §3 signing input: JCS of each signed header, the body and the params, LF-joined. */
export function buildSigningInput(
  message: Record<string, unknown>,
  signedHeaders: readonly string[],
  signedBody: boolean,
  params: Record<string, unknown>,
): Uint8Array {
  return utf8Encode(signedLines(message, signedHeaders, signedBody) + canonicalize(params))
}

/** The lines before the params line: built once for several signers. */
export function signedLines(
  message: Record<string, unknown>,
  signedHeaders: readonly string[],
  signedBody: boolean,
): string {
  let text = ''
  for (const name of signedHeaders) text += canonicalize(message[name]) + '\n'
  if (signedBody) text += canonicalize(message.body) + '\n'
  return text
}

// Params canonicalized in place: a copy would need care with a `"__proto__"` member, which
// must stay a member (and so signed).
export function receivedSigningText(
  message: Record<string, unknown>,
  sig: Record<string, unknown> & { signed_headers: readonly string[] },
): string {
  return signedLines(message, sig.signed_headers, true) + canonicalizeWithout(sig, 'sig')
}

const UNSIGNED_MEMBERS: ReadonlySet<string> = new Set(['body', 'security', 'trace'])

// Writers list the standard members in this order, any others after in code-unit order.
const HEADER_ORDER = [
  ...['version', 'message_id', 'date', 'from', 'to', 'conversation_id', 'sequence', 'phase'],
  ...['content_type', 'ttl_seconds', 'auth_level'],
]

/** The top-level members every signature covers (PROFILE §3). */
export const signedMembers = (message: Record<string, unknown>): string[] =>
  Object.keys(message).filter((k) => !UNSIGNED_MEMBERS.has(k) && message[k] !== undefined)

function requiredSignedHeaders(message: Record<string, unknown>): string[] {
  const present = signedMembers(message)
  const known = HEADER_ORDER.filter((k) => present.includes(k))
  const extra = present.filter((k) => !HEADER_ORDER.includes(k)).sort()
  return [...known, ...extra]
}

/** Options for {@link signMessage}. */
export interface SignOptions {
  /** `created` (ms or a timestamp). @default now */
  created?: number | string
  /** Extension members of the signature object (covered, PROFILE §3). */
  extensions?: Record<string, JsonValue>
  /** Where the signing runs (see {@link CryptoMode}); a server passes `pool`. @default 'auto' */
  crypto?: CryptoMode
}

// Many signatures a millisecond: the last timestamp is kept.
let lastCreatedMs = Number.NaN
let lastCreated = ''

function createdTimestamp(ms: number): string {
  if (ms !== lastCreatedMs) {
    lastCreated = formatTimestamp(ms)
    lastCreatedMs = ms
  }
  return lastCreated
}

function checkKeyId(keyId: string, from: string): void {
  if (splitKeyId(keyId, 'key_id').agent !== from) {
    const text = `key_id ${keyId} does not belong to from.agent ${from}`
    throw new AgentMsgError('invalid_signature', text, { field: 'key_id' })
  }
}

/** Sign a message (PROFILE §3) with one signer or several: a new message. */
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
    const security = { ...valid.security, signatures: [...existing, ...signatures] }
    return { ...valid, security } as Message
  } finally {
    callEnded()
  }
}
