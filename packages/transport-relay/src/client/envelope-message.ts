/** One message of an envelope or an SSE event (PROFILE §9), parsed strictly on its own. */
import { INTEGER_MEMBERS, parseStrictJsonAsync } from '@agentmsg/core/receive'

/** The value (its text when not I-JSON on its own), and what an ack names, read leniently. */
export interface EnvelopeMessage {
  value: unknown
  messageId?: string
  from?: string
}

/** `message_id` and `from.agent`, when readable (unauthenticated). */
function entryNames(value: unknown): { messageId?: string; from?: string } {
  const r = value as { message_id?: unknown; from?: { agent?: unknown } } | null | undefined
  const out: { messageId?: string; from?: string } = {}
  if (typeof r !== 'object' || r === null) return out
  if (typeof r.message_id === 'string') out.messageId = r.message_id
  if (typeof r.from?.agent === 'string') out.from = r.from.agent
  return out
}

/** An entry handed over as its text. */
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
 * Depth counts from the message's own top level; an integer member written as `1.0` (PROFILE
 * §1) is marked, so the pipeline refuses that message alone, naming the member.
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
