/**
 * `receive`: the one receive pipeline, PROFILE §6's steps after the HTTP layer, in its order.
 * The inbox, the relay's publish and every transport an agent listens on call it (the agent
 * through `createReceiver`); each keeps only the steps that are its own.
 */
import { isAgentMsgError } from '../errors.js'
import type { Message } from '../types.js'
import type { VerifyResult } from '../verify.js'
import {
  chargePerSender,
  checkAddressee,
  checkCanonicalSize,
  checkFreshness,
  checkIdempotencyKey,
  evaluateLevel,
  isDuplicateMessage,
  openSealed,
  parseBody,
  parseBodyExact,
  requireEd25519Signature,
  UNPROVEN,
  validateStructure,
  verifySignatures,
} from './steps.js'
import type {
  ReceiveContext,
  ReceivedOk,
  ReceiveInput,
  ReceiveRefusal,
  ReceiveResult,
  ReceiveStep,
} from './types.js'

/** Thrown inside `receive` to leave it with a refusal; never escapes. */
class Refused {
  constructor(readonly refusal: ReceiveRefusal) {}
}

/**
 * An {@link AgentMsgError} a step threw (other than `internal_error`) as a refusal at `step`;
 * anything else is unexpected and propagates.
 */
function refusedAt(
  step: ReceiveStep,
  message: Message | undefined,
  verified: boolean | undefined,
  error: unknown,
): never {
  if (!isAgentMsgError(error) || error.code === 'internal_error') throw error
  const refusal: ReceiveRefusal = { status: 'refused', error, step }
  if (message !== undefined) refusal.message = message
  if (verified !== undefined) refusal.verified = verified
  throw new Refused(refusal)
}

/** Run a synchronous step: no promise per step on the hot path. */
function atSync<T>(
  step: ReceiveStep,
  message: Message | undefined,
  verified: boolean | undefined,
  run: () => T,
): T {
  try {
    return run()
  } catch (error) {
    return refusedAt(step, message, verified, error)
  }
}

/** Run an asynchronous step (keys, storage, opening). */
async function at<T>(
  step: ReceiveStep,
  message: Message | undefined,
  verified: boolean | undefined,
  run: () => Promise<T>,
): Promise<T> {
  try {
    return await run()
  } catch (error) {
    return refusedAt(step, message, verified, error)
  }
}

/**
 * Receive one message: parse → validate → addressee → Idempotency-Key → canonical size → date
 * window and TTL → verify (+ a relay's Ed25519 rule) → duplicate → per-sender limit → open a
 * sealed body (PROFILE §8) → auth level (PROFILE §6). Nothing is remembered or committed: a caller that accepts the message
 * persists it, commits `decision` and remembers its id (see `createReceiver`).
 *
 * A message that is malformed and also badly signed is refused at `validate` (400), never at
 * `verify`; a duplicate is answered before the per-sender limit is charged, so replaying
 * someone's message cannot spend their quota.
 *
 * Bad input never throws: it comes back as `{status:'refused', error, step}`. Unexpected
 * failures (a resolver that throws, storage errors) do throw.
 *
 * @example
 * const result = await receive({ body: bytes, idempotencyKey }, { resolver, replay, now: Date.now })
 * if (result.status === 'refused') return errorReply(result.error.code, result.error.message)
 */
export async function receive(input: ReceiveInput, ctx: ReceiveContext): Promise<ReceiveResult> {
  try {
    return await run(input, ctx)
  } catch (error) {
    if (error instanceof Refused) return error.refusal
    throw error
  }
}

async function run(input: ReceiveInput, ctx: ReceiveContext): Promise<ReceiveResult> {
  const body = input.body
  let value = atSync('parse', undefined, undefined, () => parseBody(body))
  if (value === UNPROVEN) {
    value = await at('parse', undefined, undefined, () => parseBodyExact(body as Uint8Array))
  }
  const { message, protocolError } = atSync('validate', undefined, undefined, () => {
    const result = validateStructure(value)
    ctx.checkMessage?.(result.message)
    return result
  })
  const addressee = ctx.addressee
  if (addressee) atSync('addressee', message, false, () => checkAddressee(message, addressee))
  atSync('idempotency', message, false, () => checkIdempotencyKey(message, input.idempotencyKey))
  const jsonBytes = body instanceof Uint8Array ? body.byteLength : undefined
  atSync('size', message, false, () => checkCanonicalSize(message, jsonBytes))
  atSync('freshness', message, false, () => checkFreshness(message, ctx.replay))
  const verdict: VerifyResult = await at('verify', message, false, () =>
    verifySignatures(message, ctx.resolver, ctx.now(), ctx.transitionMs, ctx.crypto),
  )
  if (ctx.requireEd25519) {
    atSync('ed25519', message, true, () => requireEd25519Signature(verdict))
  }
  const duplicate = await at('duplicate', message, true, () =>
    isDuplicateMessage(message, ctx.replay, ctx.isDuplicate),
  )
  if (duplicate) return { status: 'duplicate', message }
  const perSender = ctx.perSender
  if (perSender) {
    atSync('per-sender', message, true, () => chargePerSender(message.from.agent, perSender))
  }
  const ok: ReceivedOk = {
    status: 'accepted',
    message,
    sealed: false,
    signed: message,
    verified: verdict,
    level: verdict.level,
    source: verdict.source,
  }
  if (protocolError) {
    // Well formed and verified, but a version or phase this agent does not speak: no
    // conversation level applies; the caller answers it with an error phase message (PROFILE §7).
    // Never processed, so never opened either.
    ok.protocolError = protocolError
    return ok
  }
  // PROFILE §8: opened only after verifying (signatures cover the sealed parts, so relays and
  // recipients verify without decrypting), and after the duplicate and per-sender steps: a
  // replay is answered 202 without being opened again, and the X25519 work of opening is
  // bounded by the per-sender limit as verifying is. Before the level step, so a part that
  // does not open, or was lifted from another message, is refused before any level is weighed.
  const opened = await at('open', message, true, () =>
    openSealed(message, ctx.opener, ctx.addressee !== undefined),
  )
  if (opened) {
    ok.message = opened
    ok.sealed = true
  }
  const levels = ctx.levels
  if (levels)
    ok.decision = await at('level', message, true, () => evaluateLevel(message, verdict, levels))
  return ok
}
