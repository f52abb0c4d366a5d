/** `receive`: the one receive pipeline, PROFILE §6's steps after the HTTP layer, in order. */
import { AgentMsgError, invalidFormat, isAgentMsgError } from '../errors.js'
import { canonicalSize } from '../jcs.js'
import { isSealedBody, validateMessage } from '../message.js'
import { PROFILE } from '../profile.js'
import { nonIntegerLiteral } from '../strict-json/integers.js'
import { INTEGER_MEMBERS } from '../strict-json/prepare.js'
import { parseStrictJsonExact, parseStrictJsonFast } from '../strict-json-async.js'
import { type TraceSpan, traced } from '../telemetry.js'
import type { Message } from '../types.js'
import { verifyMessage } from '../verify.js'
import type {
  ReceiveContext,
  ReceivedOk,
  ReceiveInput,
  ReceiveRefusal,
  ReceiveResult,
  ReceiveStep,
} from './types.js'

// JCS never makes a message more than 4× longer than its JSON text (the worst number, `1e15`,
// prints as 16 digits): below this the size check cannot fail, so the hot path skips it.
const CANONICAL_CHECK_ABOVE = PROFILE.maxMessageBytes / 4
const UNPROVEN = {}

/** PROFILE §6: the size of `JCS(message without trace)`. */
function signedSize({ trace: _trace, ...signed }: Message): number {
  return canonicalSize(signed)
}

class Refused {
  constructor(readonly refusal: ReceiveRefusal) {}
}

/**
 * Receive one message: PROFILE §6's steps, then opening (§8) and the auth level. Nothing is
 * remembered or committed: a caller that accepts the message does that (`createReceiver`).
 */
export function receive(input: ReceiveInput, ctx: ReceiveContext): Promise<ReceiveResult> {
  return traced('agentmsg.receive', 'INTERNAL', undefined, receiveIn, input, ctx)
}

async function receiveIn(span: TraceSpan | undefined, input: ReceiveInput, ctx: ReceiveContext) {
  let result: ReceiveResult
  try {
    result = await run(input, ctx)
  } catch (error) {
    if (!(error instanceof Refused)) throw error
    result = error.refusal
    span?.setAttributes({ 'error.type': result.error.code })
  }
  span?.setAttributes({ 'agentmsg.receive.outcome': result.status })
  return result
}

async function run(input: ReceiveInput, ctx: ReceiveContext): Promise<ReceiveResult> {
  let message: Message | undefined
  let verified: boolean | undefined
  // An AgentMsgError a step throws (but `internal_error`) is a refusal at that step.
  const refuse = (step: ReceiveStep, error: unknown): never => {
    if (!isAgentMsgError(error) || error.code === 'internal_error') throw error
    const refusal: ReceiveRefusal = { status: 'refused', error, step }
    if (message !== undefined) refusal.message = message
    if (verified !== undefined) refusal.verified = verified
    throw new Refused(refusal)
  }
  // Synchronous steps stay synchronous: no promise per step on the hot path.
  const at = <T>(step: ReceiveStep, run: () => T): T => {
    try {
      const value = run()
      return value instanceof Promise ? (value.catch((e) => refuse(step, e)) as T) : value
    } catch (error) {
      return refuse(step, error)
    }
  }

  // PROFILE §1: bytes are parsed strictly; a value from an envelope is taken as is unless its
  // parser marked a non-integer. Bytes the fast path cannot prove wait for the exact parser.
  const body = input.body
  const options = { integerMembers: INTEGER_MEMBERS }
  let value = at('parse', () => {
    if (body instanceof Uint8Array) return parseStrictJsonFast(body, options) ?? UNPROVEN
    const bad = nonIntegerLiteral(body)
    if (bad !== undefined) {
      const text = `${bad.literal} is not an integer written without fraction or exponent`
      throw invalidFormat(text, bad.member)
    }
    return body
  })
  if (value === UNPROVEN) {
    value = await at('parse', () => parseStrictJsonExact(body as Uint8Array, options))
  }
  const { message: valid, protocolError } = at('validate', () => {
    const result = validateMessage(value)
    ctx.checkMessage?.(result.message)
    return result
  })
  message = valid
  verified = false
  const { addressee } = ctx
  if (addressee) {
    at('addressee', () => {
      const to = valid.to
      if (to.agent !== undefined) {
        if (to.agent !== addressee.agent) {
          throw invalidFormat(`this inbox is ${addressee.agent}'s, not ${to.agent}'s`, 'to.agent')
        }
      } else if (!addressee.topics?.has(to.topic)) {
        throw invalidFormat(`${addressee.agent} is not subscribed to topic ${to.topic}`, 'to.topic')
      }
    })
  }
  const key = input.idempotencyKey
  if (key !== null && key !== undefined && key !== valid.message_id) {
    refuse('idempotency', invalidFormat('must equal the message_id', 'Idempotency-Key'))
  }
  // A small text cannot open to a message over the limit either: the sealed plaintext is part
  // of it, and JCS grows it at most 4× too.
  const small = body instanceof Uint8Array && body.byteLength <= CANONICAL_CHECK_ABOVE
  if (!small) {
    at('size', () => {
      const size = signedSize(valid)
      if (size > PROFILE.maxMessageBytes) {
        throw new AgentMsgError(
          'payload_too_large',
          `the message is ${size} bytes in canonical form; the limit is ${PROFILE.maxMessageBytes}`,
        )
      }
    })
  }
  at('freshness', () => ctx.replay.checkFreshness(valid))
  const verdict = await at('verify', () =>
    verifyMessage(valid, ctx.resolver, {
      now: ctx.now(),
      validated: true,
      crypto: ctx.crypto ?? 'pool',
      transitionMs: ctx.transitionMs,
    }),
  )
  verified = true
  if (ctx.requireEd25519 && !verdict.signatures.some((s) => s.alg === 'ed25519')) {
    refuse(
      'ed25519',
      new AgentMsgError(
        'invalid_signature',
        'a relay needs an Ed25519 signature of from.agent that verifies (PROFILE §9)',
      ),
    )
  }
  const duplicate = await at('duplicate', async () =>
    ctx.isDuplicate
      ? ctx.isDuplicate(valid)
      : ctx.replay.isDuplicate(valid.from.agent, valid.message_id),
  )
  if (duplicate) return { status: 'duplicate', message: valid }
  const { perSender } = ctx
  if (perSender) {
    at('per-sender', () => {
      const wait = perSender(valid.from.agent)
      if (wait > 0) {
        const text = `too many messages from ${valid.from.agent}; retry in ${wait} s`
        throw new AgentMsgError('rate_limited', text, { retryAfter: wait })
      }
    })
  }
  const ok: ReceivedOk = {
    status: 'accepted',
    message: valid,
    sealed: false,
    signed: valid,
    verified: verdict,
    level: verdict.level,
    source: verdict.source,
  }
  if (protocolError) {
    // A version or phase we do not speak: answered with an error phase message (PROFILE §7),
    // never processed, so never opened and no level applies.
    ok.protocolError = protocolError
    return ok
  }
  // PROFILE §8: opened after verifying, after the duplicate and per-sender steps (a replay is not
  // opened again), before the level step. The sealed-box code is imported only when needed.
  if (isSealedBody(valid.body)) {
    const opened = await at('open', async () => {
      if (!ctx.opener) {
        if (!addressee) return undefined // a relay keeps it as signed
        throw invalidFormat('this receiver cannot open sealed bodies', 'body.parts')
      }
      // A topic message sealed for other members reaches every subscriber: handed over as
      // signed, marked not for this one, rather than refused (PROFILE §8 allows topic sealing).
      if (valid.to.topic !== undefined && !hasPartFor(valid, ctx.opener.agent)) return 'not-for-me'
      const m = await (await import('../sealed-box/body.js')).openForReceiver(valid, ctx.opener)
      // PROFILE §8: within §2's size too, as if the message had arrived with that body.
      if (!small && signedSize(m) > PROFILE.maxMessageBytes) {
        throw invalidFormat(`opened, the message exceeds ${PROFILE.maxMessageBytes} bytes`, 'body')
      }
      return m
    })
    if (opened === 'not-for-me') ok.sealed = opened
    else if (opened) {
      ok.message = opened
      ok.sealed = true
    }
  }
  const levels = ctx.levels
  if (levels) {
    ok.decision = await at('level', () =>
      levels.evaluate({
        from: valid.from.agent,
        conversationId: valid.conversation_id,
        phase: valid.phase,
        requestedLevel: valid.auth_level,
        level: verdict.level,
        algs: verdict.signatures.map((s) => s.alg),
      }),
    )
  }
  return ok
}

/** Whether a sealed body has a part for `agent`. */
const hasPartFor = (message: Message, agent: string): boolean =>
  (message.body.parts as unknown[]).some(
    (p) =>
      typeof p === 'object' && p !== null && (p as { recipient?: unknown }).recipient === agent,
  )
