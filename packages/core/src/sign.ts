import { splitKeyId } from './agent-id.js'
import { base64urlEncode } from './base64url.js'
import { AgentMsgError, invalidFormat } from './errors.js'
import type { Signer } from './keys.js'
import { validateMessage } from './message.js'
import { buildSigningInput } from './signing-input.js'
import { formatTimestamp } from './timestamps.js'
import type { JsonValue, Message, SignatureObject, UnsignedMessage } from './types.js'

/** Top-level members a signature never lists in `signed_headers` (PROFILE §3). */
export const UNSIGNED_MEMBERS: ReadonlySet<string> = new Set(['body', 'security', 'trace'])

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

/**
 * The `signed_headers` a usable signature must carry for this message: every top-level member
 * present other than body, security and trace, in the conventional order.
 */
export function requiredSignedHeaders(message: Record<string, unknown>): string[] {
  const present = Object.keys(message).filter(
    (k) => !UNSIGNED_MEMBERS.has(k) && message[k] !== undefined,
  )
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
}

/**
 * Sign a message (PROFILE §3) and return a new message with the signature appended to
 * `security.signatures`; the input is not modified. Pass several signers to sign with each,
 * e.g. an Ed25519 key and an introduction token for a level-0 greeting.
 *
 * The message is validated first, and every signer's key id must belong to `from.agent`.
 *
 * @example
 * const signed = await signMessage(message, ed25519Signer(keys))
 */
export async function signMessage(
  message: UnsignedMessage | Message,
  signer: Signer | readonly Signer[],
  options: SignOptions = {},
): Promise<Message> {
  const { message: valid } = validateMessage(message)
  const signers = Array.isArray(signer) ? signer : [signer as Signer]
  if (signers.length === 0) throw new TypeError('signMessage needs at least one signer')
  const from = valid.from.agent
  const created =
    typeof options.created === 'string'
      ? options.created
      : formatTimestamp(options.created ?? Date.now())
  const signedHeaders = requiredSignedHeaders(valid as unknown as Record<string, unknown>)

  const signatures = await Promise.all(
    signers.map(async (s): Promise<SignatureObject> => {
      const { agent } = splitKeyId(s.keyId, 'key_id')
      if (agent !== from) {
        throw new AgentMsgError(
          'invalid_signature',
          `key_id ${s.keyId} does not belong to from.agent ${from}`,
          { field: 'key_id' },
        )
      }
      const params = {
        ...options.extensions,
        alg: s.alg,
        key_id: s.keyId,
        created,
        signed_headers: signedHeaders,
        signed_body: true,
      }
      const input = buildSigningInput(
        valid as unknown as Record<string, unknown>,
        signedHeaders,
        true,
        params,
      )
      const sig = await s.sign(input)
      return { ...params, sig: base64urlEncode(sig) } as SignatureObject
    }),
  )

  const existing = valid.security?.signatures ?? []
  if ('sig' in (options.extensions ?? {}))
    throw invalidFormat('extensions cannot set sig', 'extensions')
  return {
    ...valid,
    security: { ...valid.security, signatures: [...existing, ...signatures] },
  } as Message
}
