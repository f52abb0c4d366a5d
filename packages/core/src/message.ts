import { assertRelayUrl, parseAgentId } from './agent-id.js'
import { base64urlDecode } from './base64url.js'
import { invalidFormat } from './errors.js'
import { parseTimestamp } from './timestamps.js'
import { isObject, type Message, PHASES } from './types.js'

const ID_RE = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/
const ID_RULE = 'must be 1–128 characters of [A-Za-z0-9._:-] starting with a letter or digit'
const TOPIC_RE = /^[a-z0-9._/-]{1,128}$/
const MAX_INT = Number.MAX_SAFE_INTEGER
const PHASE_SET: ReadonlySet<string> = new Set(PHASES)

/** Protocol-level problems: answered 202 and then with an error phase message (PROFILE §7). */
export interface ProtocolError {
  code: 'version_mismatch' | 'unknown_phase'
  message: string
}

/** The outcome of {@link validateMessage}: `protocolError` for a version or phase we do not speak. */
export interface ValidationResult {
  message: Message
  protocolError?: ProtocolError
}

type Obj = Record<string, unknown>

export function requireObject(v: unknown, field: string): Obj {
  if (!isObject(v)) throw invalidFormat('must be an object', field)
  return v
}

export function requireArray(v: unknown, field: string): unknown[] {
  if (!Array.isArray(v)) throw invalidFormat('must be an array', field)
  return v
}

export function requireString(v: unknown, field: string): string {
  if (typeof v !== 'string') throw invalidFormat('must be a string', field)
  return v
}

function requireInt(v: unknown, field: string, min: number, max: number): void {
  if (!Number.isInteger(v)) throw invalidFormat('must be an integer', field)
  if ((v as number) < min || (v as number) > max) {
    throw invalidFormat(`must be between ${min} and ${max}`, field)
  }
}

/** A `message_id` (or `conversation_id`) of PROFILE §2's grammar. */
export function parseMessageId(v: unknown, field = 'message_id'): string {
  if (!ID_RE.test(requireString(v, field))) throw invalidFormat(ID_RULE, field)
  return v as string
}

/**
 * PROFILE §2's body rule. `opened`: a body out of a sealed part, which holds no sealed part
 * (PROFILE §8): it is validated as if the message had arrived with it.
 */
export function validateBody(input: unknown, opened = false): void {
  const parts = requireArray(requireObject(input, 'body').parts, 'body.parts')
  for (let i = 0; i < parts.length; i++) {
    const field = `body.parts[${i}]`
    const part = requireObject(parts[i], field)
    const type = requireString(part.type, `${field}.type`)
    switch (type) {
      case 'text':
        requireString(part.text, `${field}.text`)
        break
      case 'data':
        if (!('data' in part)) throw invalidFormat('is required for a data part', `${field}.data`)
        break
      case 'sealed':
        if (opened) throw invalidFormat('a sealed body holds no sealed part', `${field}.type`)
        parseAgentId(part.recipient, `${field}.recipient`)
        requireString(part.key_id, `${field}.key_id`)
        base64urlDecode(
          requireString(part.ciphertext, `${field}.ciphertext`),
          `${field}.ciphertext`,
        )
        break
      default:
        throw invalidFormat(`unknown part type "${type}" (text, data or sealed)`, `${field}.type`)
    }
  }
}

function validateSecurity(security: unknown): void {
  const sec = requireObject(security, 'security')
  const field = 'security.signatures'
  if (sec.signatures !== undefined) {
    requireArray(sec.signatures, field).forEach((s, i) => requireObject(s, `${field}[${i}]`))
  }
  if (sec.encryption !== undefined) {
    const enc = requireObject(sec.encryption, 'security.encryption')
    requireString(enc.scheme, 'security.encryption.scheme')
    const recipients = requireArray(enc.recipients, 'security.encryption.recipients')
    recipients.forEach((r, i) => parseAgentId(r, `security.encryption.recipients[${i}]`))
  }
}

/** Check a parsed message against PROFILE §2; another version or phase is a `protocolError`. */
export function validateMessage(input: unknown): ValidationResult {
  const m = requireObject(input, 'message')
  let protocolError: ProtocolError | undefined

  const version = requireString(m.version, 'version')
  if (!/^[0-9]+(\.[0-9]+)*$/.test(version))
    throw invalidFormat('must look like "1" or "1.2"', 'version')
  if (version.split('.', 1)[0] !== '1') {
    const message = `version ${version} is not supported (major 1)`
    protocolError = { code: 'version_mismatch', message }
  }

  parseMessageId(m.message_id)
  parseTimestamp(requireString(m.date, 'date'), 'date')

  const from = requireObject(m.from, 'from')
  parseAgentId(from.agent, 'from.agent')
  if (from.relays !== undefined) {
    requireArray(from.relays, 'from.relays').forEach((r, i) =>
      assertRelayUrl(r, `from.relays[${i}]`),
    )
  }

  const to = requireObject(m.to, 'to')
  const hasAgent = to.agent !== undefined
  const hasTopic = to.topic !== undefined
  if (hasAgent === hasTopic) throw invalidFormat('must have exactly one of agent or topic', 'to')
  if (hasAgent) parseAgentId(to.agent, 'to.agent')
  else if (typeof to.topic !== 'string' || !TOPIC_RE.test(to.topic)) {
    throw invalidFormat('must be 1–128 characters of [a-z0-9._/-]', 'to.topic')
  }

  parseMessageId(m.conversation_id, 'conversation_id')
  requireInt(m.sequence, 'sequence', 0, MAX_INT)

  const phase = requireString(m.phase, 'phase')
  if (!PHASE_SET.has(phase) && !protocolError) {
    protocolError = { code: 'unknown_phase', message: `phase "${phase}" is not known` }
  }
  const contentType = requireString(m.content_type, 'content_type')
  if (contentType.length === 0) throw invalidFormat('must not be empty', 'content_type')

  if (m.ttl_seconds !== undefined) requireInt(m.ttl_seconds, 'ttl_seconds', 1, MAX_INT)
  if (m.auth_level !== undefined) requireInt(m.auth_level, 'auth_level', 0, 3)

  validateBody(m.body)
  if (m.security !== undefined) validateSecurity(m.security)
  if (m.trace !== undefined) {
    const received = requireArray(requireObject(m.trace, 'trace').received, 'trace.received')
    received.forEach((e, i) => requireObject(e, `trace.received[${i}]`))
  }

  const message = m as unknown as Message
  return protocolError ? { message, protocolError } : { message }
}

/** Whether `body` is sealed: decided from `body.parts` alone (PROFILE §8), never `security`. */
export function isSealedBody(body: { parts?: unknown } | undefined): boolean {
  const parts = body?.parts
  return Array.isArray(parts) && parts.some((p) => isObject(p) && p.type === 'sealed')
}
