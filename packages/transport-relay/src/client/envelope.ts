/**
 * Envelopes (PROFILE §9): §1's depth limit counts from each message's own top level, so a scan
 * cuts out each message, parsed strictly on its own, and the shell (`null` in their places) too.
 * An entry that is not I-JSON spoils nothing around it: it is handed over as its text.
 */

import { invalidFormat } from '@agentmsg/core/http'
import { parseStrictJson } from '@agentmsg/core/receive'
import { type EnvelopeMessage, readMessage, textMessage } from './envelope-message.js'

/** A span of the text: [start, end). */
interface Span {
  start: number
  end: number
}

const QUOTE = 0x22
const BACKSLASH = 0x5c

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09
}

function skipSpace(t: string, i: number): number {
  while (i < t.length && isSpace(t.charCodeAt(i))) i++
  return i
}

/** The index after the string that opens at `i`, or -1 when it never closes. */
function stringEnd(t: string, i: number): number {
  let from = i + 1
  for (;;) {
    const q = t.indexOf('"', from)
    if (q < 0) return -1
    let slashes = 0
    while (t.charCodeAt(q - 1 - slashes) === BACKSLASH) slashes++
    if (slashes % 2 === 0) return q + 1
    from = q + 1
  }
}

/**
 * The index after the value at `i`, or -1 when it runs off the end: a balanced scan with a
 * counter, no recursion (a 1 MiB `[[[…` cannot overflow the stack); its own parse validates it.
 */
function valueEnd(t: string, i: number): number {
  const c = t.charCodeAt(i)
  if (c === QUOTE) return stringEnd(t, i)
  if (c === 0x7b || c === 0x5b) {
    let depth = 0
    for (let j = i; j < t.length; j++) {
      const d = t.charCodeAt(j)
      if (d === QUOTE) {
        const e = stringEnd(t, j)
        if (e < 0) return -1
        j = e - 1
      } else if (d === 0x7b || d === 0x5b) depth++
      else if ((d === 0x7d || d === 0x5d) && --depth === 0) return j + 1
    }
    return -1
  }
  let j = i
  while (j < t.length && !isSpace(t.charCodeAt(j)) && !',:]}'.includes(t[j]!)) j++
  return j > i ? j : -1
}

/**
 * The top-level members of the object text `t`; a last value that runs off the end is taken up
 * to the final `}`. `undefined` when the text is not an object this scan can follow.
 */
function topMembers(t: string): Array<{ key: string; value: Span }> | undefined {
  // (Other trailing white space than JSON's is refused by the shell's strict parse.)
  const close = t.trimEnd().length - 1
  let i = skipSpace(t, 0)
  if (t.charCodeAt(i) !== 0x7b || t.charCodeAt(close) !== 0x7d) return undefined
  const out: Array<{ key: string; value: Span }> = []
  i = skipSpace(t, i + 1)
  if (i === close) return out
  for (;;) {
    const keyEnd = t.charCodeAt(i) === QUOTE ? stringEnd(t, i) : -1
    if (keyEnd < 0) return undefined
    let key: unknown
    try {
      key = JSON.parse(t.slice(i, keyEnd))
    } catch {
      return undefined
    }
    i = skipSpace(t, keyEnd)
    if (t[i] !== ':') return undefined
    const start = skipSpace(t, i + 1)
    let end = valueEnd(t, start)
    if (end < 0 || end > close) end = close
    out.push({ key: key as string, value: { start, end } })
    i = skipSpace(t, end)
    if (i === close) return out
    if (t[i] !== ',') return undefined
    i = skipSpace(t, i + 1)
  }
}

/** The element spans between `open` (`[`) and `close` (`]`); one that runs off is taken up to `close` (`spilled`). */
function arrayElements(
  t: string,
  open: number,
  close: number,
): { spans: Span[]; spilled: boolean } {
  const spans: Span[] = []
  let i = skipSpace(t, open + 1)
  if (i === close) return { spans, spilled: false }
  for (;;) {
    let end = valueEnd(t, i)
    const spilled = end < 0 || end > close
    if (spilled) end = close
    spans.push({ start: i, end })
    if (spilled) return { spans, spilled }
    i = skipSpace(t, end)
    if (i === close) return { spans, spilled: false }
    if (t[i] !== ',') {
      spans[spans.length - 1]!.end = close
      return { spans, spilled: true }
    }
    i = skipSpace(t, i + 1)
  }
}

/** `text` with each span replaced by `null`. */
function shellOf(t: string, spans: readonly Span[]): string {
  const parts: string[] = []
  let at = 0
  for (const s of spans) {
    parts.push(t.slice(at, s.start), 'null')
    at = s.end
  }
  parts.push(t.slice(at))
  return parts.join('')
}

/** A WebSocket frame's shell, and a `message` frame's message text; throws when the frame is not I-JSON. */
export function parseFrame(text: string): { frame: Record<string, unknown>; message?: string } {
  const span = topMembers(text)?.find((m) => m.key === 'message')?.value
  if (span) {
    const frame = parseStrictJson(shellOf(text, [span]))
    if (frame.type === 'message') return { frame, message: text.slice(span.start, span.end) }
  }
  return { frame: parseStrictJson(text) }
}

/** `],"cursor":<string or null>}` at the end of a page (how relays write it, after the list). */
const PAGE_TAIL = /\]\s*,\s*"cursor"\s*:\s*(?:"(?:[^"\\]|\\.)*"|null)\s*\}\s*$/

/**
 * A retrieve page `{messages:[…], cursor}`, each message read on its own (`asText`: as its text,
 * the page not being UTF-8). `spilled`: an unbalanced entry may have swallowed the ones after
 * it. Throws `invalid_format` when the page is not I-JSON or has no list of messages.
 */
export async function parsePage(
  text: string,
  asText = false,
): Promise<{ messages: EnvelopeMessage[]; cursor: unknown; spilled: boolean }> {
  const list = topMembers(text)?.find((m) => m.key === 'messages')?.value
  let open: number
  let close: number
  if (list && text.charCodeAt(list.start) === 0x5b && text.charCodeAt(list.end - 1) === 0x5d) {
    open = list.start
    close = list.end - 1
  } else {
    // The scan lost its way in an unbalanced entry: find the list by the page's own ends.
    const head = /^\s*\{\s*"messages"\s*:\s*\[/.exec(text)
    const tail = PAGE_TAIL.exec(text)
    if (!head || !tail || tail.index < head[0].length - 1) return refusePage(text)
    open = head[0].length - 1
    close = tail.index
  }
  const { spans, spilled } = arrayElements(text, open, close)
  const shell = parseStrictJson(shellOf(text, spans))
  if (!Array.isArray(shell.messages) || shell.messages.length !== spans.length) {
    return refusePage(text)
  }
  const texts = spans.map((s) => text.slice(s.start, s.end))
  const messages = asText ? texts.map(textMessage) : await Promise.all(texts.map(readMessage))
  return { messages, cursor: shell.cursor, spilled }
}

/** A page this module cannot take apart: the strict parse says why, or it has no list. */
function refusePage(text: string): never {
  parseStrictJson(text)
  throw invalidFormat('a page without a list of messages', 'messages')
}
