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
      type: 'sealed'
      recipient: string
      key_id: string
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
  version: string
  message_id: string
  date: string
  from: { agent: string; relays?: string[]; [k: string]: JsonValue | undefined }
  to: { agent: string; topic?: undefined } | { topic: string; agent?: undefined }
  conversation_id: string
  sequence: number
  phase: string
  content_type: string
  ttl_seconds?: number
  auth_level?: number
  body: { parts: BodyPart[]; [k: string]: JsonValue }
  security?: {
    signatures: SignatureObject[]
    encryption?: { scheme: string; recipients: string[]; [k: string]: JsonValue }
    [k: string]: JsonValue | undefined
  }
  trace?: { received: TraceEntry[]; [k: string]: JsonValue }
  [extension: string]: unknown
}

/** A message before it is signed. */
export type UnsignedMessage = Message
