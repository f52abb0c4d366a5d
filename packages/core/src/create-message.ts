import { randomBytes } from './bytes.js'
import { formatTimestamp } from './timestamps.js'
import type { BodyPart, JsonObject, Phase, UnsignedMessage } from './types.js'

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ'

/** A new message id: a ULID, so ids sort by creation time (PROFILE §2). */
export function createMessageId(now: number = Date.now()): string {
  let out = ''
  let t = now
  for (let i = 9; i >= 0; i--) {
    out = CROCKFORD[t % 32] + out
    t = Math.floor(t / 32)
  }
  const r = randomBytes(10)
  let acc = 0
  let bits = 0
  for (const byte of r) {
    acc = (acc << 8) | byte
    bits += 8
    while (bits >= 5) {
      out += CROCKFORD[(acc >>> (bits - 5)) & 31]
      bits -= 5
    }
    acc &= (1 << bits) - 1
  }
  return out
}

/** Options for {@link createMessage}. */
export interface CreateMessageOptions {
  /** The sender's agent id. */
  from: string
  /** An agent id, or `{ topic }` for a relay topic. */
  to: string | { topic: string }
  /** `conversation_id`. */
  conversationId: string
  /** Per sender per conversation, from 0. */
  sequence: number
  /** The conversation phase. */
  phase: Phase
  /** One text part; or `parts`. */
  text?: string
  /** The body parts; or `text`. */
  parts?: BodyPart[]
  /** @default 'application/json' */
  contentType?: string
  /** `from.relays`. */
  relays?: string[]
  /** `ttl_seconds`: expires that long after `date`. */
  ttlSeconds?: number
  /** `auth_level`: the level asked for (PROFILE §5). */
  authLevel?: number
  /** @default now */
  date?: number
  /** @default a new ULID */
  messageId?: string
  /** Extra top-level members (signed). */
  extensions?: JsonObject
}

/** Build an unsigned message with `version: "1"`, a fresh id and the current date. */
export function createMessage(o: CreateMessageOptions): UnsignedMessage {
  const date = o.date ?? Date.now()
  const msg: Record<string, unknown> = {
    ...o.extensions,
    version: '1',
    message_id: o.messageId ?? createMessageId(date),
    date: formatTimestamp(date),
    from: o.relays ? { agent: o.from, relays: o.relays } : { agent: o.from },
    to: typeof o.to === 'string' ? { agent: o.to } : { topic: o.to.topic },
    conversation_id: o.conversationId,
    sequence: o.sequence,
    phase: o.phase,
    content_type: o.contentType ?? 'application/json',
    body: { parts: o.parts ?? (o.text !== undefined ? [{ type: 'text', text: o.text }] : []) },
  }
  if (o.ttlSeconds !== undefined) msg.ttl_seconds = o.ttlSeconds
  if (o.authLevel !== undefined) msg.auth_level = o.authLevel
  return msg as unknown as UnsignedMessage
}
