/** JSON values as the SDK stores and signs them. */
export type JsonValue =
  | null
  | boolean
  | number
  | string
  | JsonValue[]
  | { [key: string]: JsonValue }
export type JsonObject = { [key: string]: JsonValue }

/** A JSON object, not an array. */
export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v)

/** Set `o[key]` as an own member: plain assignment to `"__proto__"` would set the prototype. */
export function defineMember(o: object, key: string, value: unknown): void {
  Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true })
}

/** Conversation phases of PROFILE §2. */
export const PHASES = ['greeting', 'request', 'response', 'update', 'close', 'error'] as const
/** A conversation phase, one of `PHASES`. */
export type Phase = (typeof PHASES)[number]

/** Authentication level 0–3 (SPEC §3.2, PROFILE §5). */
export type AuthLevel = 0 | 1 | 2 | 3

export type SignatureAlg = 'ed25519' | 'hmac-sha256'

/** A member of `security.signatures` (SPEC §2.5). */
export interface SignatureObject {
  alg: string
  key_id: string
  created: string
  signed_headers: string[]
  signed_body: boolean
  sig: string
  [extension: string]: JsonValue
}

/** A body part (PROFILE §2, §8). */
export type BodyPart =
  | { type: 'text'; text: string; [k: string]: JsonValue }
  | { type: 'data'; data: JsonValue; [k: string]: JsonValue }
  | {
      /** The body's parts sealed for one recipient (PROFILE §8). */
      type: 'sealed'
      /** The agent id it is sealed for. */
      recipient: string
      /** The id of the recipient's key it is sealed to. */
      key_id: string
      /** The sealed box, base64url. */
      ciphertext: string
      [k: string]: JsonValue
    }

/** A trace entry appended by a relay (SPEC §2.7). */
export interface TraceEntry {
  by: string
  with: string
  at: string
  from: string
  [k: string]: JsonValue
}

/** A structured message (PROFILE §2). Unknown top-level members are kept and must be signed. */
export interface Message {
  /** The protocol's major version, `"1"`. */
  version: string
  /** Unique per sender; this SDK writes a ULID. */
  message_id: string
  /** When it was written (RFC 3339, UTC). */
  date: string
  /** The sender's agent id, and normal-form relay URLs where replies reach it. */
  from: { agent: string; relays?: string[]; [k: string]: JsonValue | undefined }
  /** Exactly one of: an agent id, or a relay pub/sub topic. */
  to: { agent: string; topic?: undefined } | { topic: string; agent?: undefined }
  /** The conversation it belongs to (same grammar as `message_id`). */
  conversation_id: string
  /** Per sender per conversation, from 0. */
  sequence: number
  /** A {@link Phase}; any other is a protocol-level error. */
  phase: string
  /** The body's media type, e.g. `application/json`. */
  content_type: string
  /** The message expires at `date + ttl_seconds`. */
  ttl_seconds?: number
  /** The level the sender asks for in this conversation (PROFILE §5). */
  auth_level?: number
  /** The content: text, data and sealed parts, in order. */
  body: { parts: BodyPart[]; [k: string]: JsonValue }
  /** Signatures, and who a sealed body is for. */
  security?: {
    /** Each over its signed headers and the body (PROFILE §3). */
    signatures: SignatureObject[]
    /** When the body is sealed (PROFILE §8): the scheme, and the agent ids it is sealed for. */
    encryption?: { scheme: string; recipients: string[]; [k: string]: JsonValue }
    [k: string]: JsonValue | undefined
  }
  /** One entry per relay that handled it, appended by each; unsigned, informational. */
  trace?: { received: TraceEntry[]; [k: string]: JsonValue }
  [extension: string]: unknown
}

/** A message before it is signed. */
export type UnsignedMessage = Message
