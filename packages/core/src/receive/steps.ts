/**
 * The steps of the receive pipeline, one small function each, in PROFILE §6 order. Each throws
 * an {@link AgentMsgError} to refuse; `receive` (pipeline.ts) runs them and names the step that
 * refused. Isomorphic.
 */
import type { AuthDecision, AuthLevelTracker } from '../auth-level.js'
import type { CryptoMode } from '../crypto/provider.js'
import { AgentMsgError, invalidFormat } from '../errors.js'
import { canonicalizeToBytes } from '../jcs.js'
import { type ValidationResult, validateMessage } from '../message.js'
import type { ReplayGuard } from '../replay.js'
import type { KeyResolver } from '../resolver.js'
import { isSealedBody } from '../sealed-box/detect.js'
import { nonIntegerLiteral } from '../strict-json/integers.js'
import { INTEGER_MEMBERS } from '../strict-json/prepare.js'
import { parseStrictJsonExact, parseStrictJsonFast } from '../strict-json-async.js'
import type { Message } from '../types.js'
import { type VerifyResult, verifyMessage } from '../verify.js'
import type { ReceiveOpener } from './types.js'

/** Largest message, `JCS(message without trace)`, a receiver accepts (PROFILE §6). */
export const MAX_MESSAGE_BYTES = 1_048_576

/**
 * JCS never makes a message more than 4× longer than its JSON text: strings and structure only
 * shrink, and the worst number is `1e15` (4 bytes) printed as 16 digits. Below this many bytes
 * of JSON the canonical-size check cannot fail, so it is skipped on the hot path.
 */
export const CANONICAL_CHECK_ABOVE = MAX_MESSAGE_BYTES / 4

/** What {@link parseBody} returns for bytes the fast path could not prove: see {@link parseBodyExact}. */
export const UNPROVEN: object = {}

/**
 * PROFILE §1: bytes are parsed as strict I-JSON, the integer fields written without fraction or
 * exponent; a value taken from an envelope is used as is, unless the envelope's parser marked
 * one of its integer fields (`parseStrictJson` with `onNonInteger: 'mark'`). Bytes the strict
 * parser's fast path cannot prove come back as {@link UNPROVEN}: the exact parser, imported on
 * first need (issue 12), then decides with {@link parseBodyExact}.
 */
export function parseBody(body: Uint8Array | unknown): unknown {
  if (body instanceof Uint8Array) {
    return parseStrictJsonFast(body, { integerMembers: INTEGER_MEMBERS }) ?? UNPROVEN
  }
  const bad = nonIntegerLiteral(body)
  if (bad !== undefined) {
    throw invalidFormat(
      `${bad.literal} is not an integer written without fraction or exponent`,
      bad.member,
    )
  }
  return body
}

/** The exact strict parser's verdict on bytes {@link parseBody} left {@link UNPROVEN}. */
export function parseBodyExact(body: Uint8Array): Promise<unknown> {
  return parseStrictJsonExact(body, { integerMembers: INTEGER_MEMBERS })
}

/** PROFILE §2: the message's structure (a version or phase we do not speak is not an error here). */
export function validateStructure(value: unknown): ValidationResult {
  return validateMessage(value)
}

/** PROFILE §6: `to.agent` is this agent, or `to.topic` one it subscribed to. */
export function checkAddressee(
  message: Message,
  addressee: { agent: string; topics?: ReadonlySet<string> },
): void {
  const to = message.to
  if (to.agent !== undefined) {
    if (to.agent !== addressee.agent) {
      throw invalidFormat(`this inbox is ${addressee.agent}'s, not ${to.agent}'s`, 'to.agent')
    }
  } else if (!addressee.topics?.has(to.topic)) {
    throw invalidFormat(`${addressee.agent} is not subscribed to topic ${to.topic}`, 'to.topic')
  }
}

/** PROFILE §6: an `Idempotency-Key`, when present, equals `message_id`. */
export function checkIdempotencyKey(message: Message, key: string | null | undefined): void {
  if (key !== null && key !== undefined && key !== message.message_id) {
    throw invalidFormat('must equal the message_id', 'Idempotency-Key')
  }
}

/**
 * PROFILE §6: `JCS(message without trace)` is at most 1 MiB. `jsonBytes`, the length of the
 * JSON text the message was parsed from, lets small messages skip the canonical form.
 */
export function checkCanonicalSize(message: Message, jsonBytes?: number): void {
  if (jsonBytes !== undefined && jsonBytes <= CANONICAL_CHECK_ABOVE) return
  const { trace: _trace, ...signed } = message
  const size = canonicalizeToBytes(signed).byteLength
  if (size > MAX_MESSAGE_BYTES) {
    throw new AgentMsgError(
      'payload_too_large',
      `the message is ${size} bytes in canonical form; the limit is ${MAX_MESSAGE_BYTES}`,
    )
  }
}

/** PROFILE §6: the date window (8 days back, 5 minutes ahead) and the TTL (`stale_message`). */
export function checkFreshness(message: Message, replay: ReplayGuard): void {
  replay.checkFreshness(message)
}

/** PROFILE §3, §4: the signature verdict, keys resolved (`unavailable` when a lookup failed for now). */
export function verifySignatures(
  message: Message,
  resolver: KeyResolver,
  now: number,
  transitionMs: number | undefined,
  crypto: CryptoMode = 'pool',
): Promise<VerifyResult> {
  return verifyMessage(message, resolver, {
    now,
    validated: true,
    crypto,
    ...(transitionMs !== undefined ? { transitionMs } : {}),
  })
}

/** PROFILE §9: a relay needs at least one verified Ed25519 signature of `from.agent`. */
export function requireEd25519Signature(verdict: VerifyResult): void {
  if (!verdict.signatures.some((s) => s.alg === 'ed25519')) {
    throw new AgentMsgError(
      'invalid_signature',
      'a relay needs an Ed25519 signature of from.agent that verifies (PROFILE §9)',
    )
  }
}

/** PROFILE §6, §9: whether (from, message_id) was received before (then 202, not processed again). */
export function isDuplicateMessage(
  message: Message,
  replay: ReplayGuard,
  isDuplicate: ((message: Message) => Promise<boolean>) | undefined,
): Promise<boolean> {
  return isDuplicate
    ? isDuplicate(message)
    : replay.isDuplicate(message.from.agent, message.message_id)
}

/** PROFILE §6: the per-sender limit, charged for verified new messages only (`rate_limited`). */
export function chargePerSender(from: string, perSender: (from: string) => number): void {
  const wait = perSender(from)
  if (wait > 0) {
    throw new AgentMsgError('rate_limited', `too many messages from ${from}; retry in ${wait} s`, {
      retryAfter: wait,
    })
  }
}

/**
 * PROFILE §8: open a sealed body for this agent, after its signatures verified (they cover the
 * sealed parts). Returns the message with the opened body, or undefined when the body is not
 * sealed, or when there is no opener and no addressee (a relay keeps it as signed). The
 * sealed-box cryptography is imported only now, so receivers that never see a sealed body
 * (a relay-only browser agent) do not load it.
 */
export async function openSealed(
  message: Message,
  opener: ReceiveOpener | undefined,
  isAgent: boolean,
): Promise<Message | undefined> {
  if (!isSealedBody(message.body)) return undefined
  if (!opener) {
    if (!isAgent) return undefined
    throw invalidFormat('this receiver cannot open sealed bodies', 'body.parts')
  }
  const { openForReceiver } = await import('../sealed-box/receive.js')
  return openForReceiver(message, opener)
}

/** PROFILE §5: the conversation's level admits this message (evaluated here, committed once accepted). */
export function evaluateLevel(
  message: Message,
  verdict: VerifyResult,
  levels: AuthLevelTracker,
): Promise<AuthDecision> {
  return levels.evaluate({
    from: message.from.agent,
    conversationId: message.conversation_id,
    phase: message.phase,
    requestedLevel: message.auth_level,
    level: verdict.level,
    algs: verdict.signatures.map((s) => s.alg),
  })
}
