/**
 * How `inbox` and `listen` print a verified message: one human line by default, one JSON object
 * per line with `--json` (for scripts).
 */
import type { ReceivedMessage } from '@agentmsg/client/node'
import { safeText } from './command.js'

/**
 * The `--json` line: the message (its body opened when it came sealed), who sent it, the
 * conversation, the level it verified at and where the key came from (PROFILE §5), whether the
 * sender is a known contact, whether the body came sealed (PROFILE §8), and the transport.
 * `sender` repeats `from` (the first `inbox` lines named it so).
 */
export function jsonLine(m: ReceivedMessage): string {
  return `${JSON.stringify({
    message: m.message,
    from: m.from,
    sender: m.from,
    conversation: m.conversationId,
    level: m.level,
    source: m.source,
    known_contact: m.knownContact,
    sealed: m.sealed,
    transport: m.transport,
  })}\n`
}

/**
 * The human line: time received (UTC), sender, level, known contact or not, sealed or plain,
 * then the text on the same line (line breaks and control characters escaped: peer text never
 * drives the terminal). A body without text parts shows its content type.
 */
export function humanLine(m: ReceivedMessage, now = new Date()): string {
  const time = now.toISOString().replace(/\.\d{3}Z$/, 'Z')
  const contact = m.knownContact ? 'contact' : 'new'
  const text = m.text !== '' ? m.text : `[${m.message.content_type ?? 'no text'}]`
  return `${time}  ${safeText(m.from)}  level ${m.level} ${contact}  ${m.sealed ? 'sealed' : 'plain '}  ${safeText(text)}\n`
}

export const messageLine = (m: ReceivedMessage, json: boolean) =>
  json ? jsonLine(m) : humanLine(m)
