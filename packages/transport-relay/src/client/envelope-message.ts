/**
 * One message of an envelope or an SSE event (PROFILE §9), parsed strictly on its own, or handed
 * over as its text with what a lenient reading finds to acknowledge it by. The strict parser's
 * exact path is loaded only for a message its fast path cannot prove.
 */
import { INTEGER_MEMBERS, parseStrictJsonAsync } from '@agentmsg/core/encoding'

/** One message cut out of an envelope (or an SSE event's data). */
export interface EnvelopeMessage {
  /** The parsed value when the message is I-JSON on its own; else its text, unchanged. */
  value: unknown
  /** `message_id` as delivered (read leniently when the message is not I-JSON). */
  messageId?: string
  /** `from.agent` as delivered (read leniently when the message is not I-JSON). */
  from?: string
}

/** `message_id` and `from.agent` of a value, when readable (unauthenticated: what acks name). */
function entryNames(value: unknown): { messageId?: string; from?: string } {
  const r = value as { message_id?: unknown; from?: { agent?: unknown } } | null | undefined
  const out: { messageId?: string; from?: string } = {}
  if (typeof r !== 'object' || r === null) return out
  if (typeof r.message_id === 'string') out.messageId = r.message_id
  if (typeof r.from?.agent === 'string') out.from = r.from.agent
  return out
}

/** An entry handed over as its text, with what a lenient reading finds to acknowledge it by. */
export function textMessage(text: string): EnvelopeMessage {
  let lenient: unknown
  try {
    lenient = JSON.parse(text)
  } catch {
    // not JSON at all: nothing names it, so it can only be skipped by its cursor
  }
  return { value: text, ...entryNames(lenient) }
}

/**
 * One message's JSON text (or UTF-8 bytes) parsed strictly on its own: depth 64 from its own top
 * level; an integer member written with a fraction or exponent (PROFILE §1) is marked on the
 * value, so the pipeline refuses that message alone, naming the member.
 */
export async function readMessage(raw: string | Uint8Array): Promise<EnvelopeMessage> {
  try {
    const value = await parseStrictJsonAsync(raw, {
      integerMembers: INTEGER_MEMBERS,
      onNonInteger: 'mark',
    })
    return { value, ...entryNames(value) }
  } catch {
    return textMessage(typeof raw === 'string' ? raw : new TextDecoder().decode(raw))
  }
}
