/**
 * SPEC §5.7.3: a relay is not trusted with message integrity, so every message it delivers is
 * validated and its signatures verified again before anyone sees it.
 */
import {
  AgentMsgError,
  invalidFormat,
  isAgentMsgError,
  validateMessage,
  verifyMessage,
  type KeyResolver,
  type Message,
  type VerifyOptions,
  type VerifyResult,
} from '@agentmsg/core'

/** A delivered message that was refused: not handed to the handler, never acknowledged. */
export interface RejectedDelivery {
  /** Why: `invalid_format`, `invalid_signature`, `unknown_sender`, `key_revoked`, … */
  error: AgentMsgError
  /** The relay's cursor of the entry, when it gave one (streams). */
  cursor?: string
  /** `message_id` as delivered, when there was a readable one (unauthenticated). */
  messageId?: string
  /** `from.agent` as delivered, when there was a readable one (unauthenticated). */
  from?: string
  /** The delivered value, for inspection only. */
  raw: unknown
}

/** The outcome of checking one delivered message. */
export type CheckedDelivery =
  { ok: true; message: Message; verified: VerifyResult } | { ok: false; rejected: RejectedDelivery }

/** What {@link checkDelivered} needs. */
export interface CheckContext {
  /** The mailbox owner: a direct message must be addressed to it. */
  agent: string
  resolver: KeyResolver
  verifyOptions?: VerifyOptions | undefined
}

function readable(raw: unknown): { messageId?: string; from?: string } {
  if (typeof raw !== 'object' || raw === null) return {}
  const r = raw as { message_id?: unknown; from?: { agent?: unknown } }
  const out: { messageId?: string; from?: string } = {}
  if (typeof r.message_id === 'string') out.messageId = r.message_id
  if (typeof r.from === 'object' && r.from !== null && typeof r.from.agent === 'string') {
    out.from = r.from.agent
  }
  return out
}

/**
 * Validate and verify one delivered message. Never throws for a bad message: the verdict comes
 * back as `{ ok: false }`. A key lookup that failed for now (`unavailable`) comes back the same
 * way; it says nothing about the message, so streams retry it rather than skip it.
 *
 * Checks beyond {@link verifyMessage}: a direct message must be addressed to the mailbox owner
 * (a relay could otherwise hand over someone else's validly signed mail). The date window and
 * replay protection stay with the receive pipeline, as for every transport.
 */
export async function checkDelivered(
  raw: unknown,
  ctx: CheckContext,
  cursor?: string,
): Promise<CheckedDelivery> {
  try {
    const { message } = validateMessage(raw)
    if (message.to.agent !== undefined && message.to.agent !== ctx.agent) {
      throw invalidFormat(`is ${message.to.agent}, not the mailbox owner ${ctx.agent}`, 'to.agent')
    }
    const verified = await verifyMessage(message, ctx.resolver, {
      ...ctx.verifyOptions,
      validated: true,
    })
    return { ok: true, message, verified }
  } catch (e) {
    const error = isAgentMsgError(e)
      ? e
      : new AgentMsgError('internal_error', `verifying a delivered message failed: ${String(e)}`, {
          cause: e,
        })
    const rejected: RejectedDelivery = { error, raw, ...readable(raw) }
    if (cursor !== undefined) rejected.cursor = cursor
    return { ok: false, rejected }
  }
}
