/**
 * `POST /relay/publish` (PROFILE §9): core's receive pipeline with the relay's rules (Ed25519,
 * an empty `trace.received`, duplicates asked of the store before the per-sender limit), then
 * the mailbox lookup (after the signature verified), the trace entry, the durable store, 202.
 */
import { type Message, PROFILE, parseAgentId } from '@agentmsg/core'
import { formatTimestamp, invalidFormat, parseTimestamp } from '@agentmsg/core/http'
import { type ReceiveContext, ReplayGuard, receive } from '@agentmsg/core/receive'
import { acceptedReply, canonicalSize, errorReply, type HttpReply } from '@agentmsg/core/server'
import { MailboxFullError, RelayStorageFullError } from '../store/types.js'
import { jsonBody, type RelayContext, storageBucketOf } from './context.js'

/** PROFILE §9: this profile has no relay-to-relay forwarding. */
function checkNotForwarded(message: Message): void {
  const why = 'must be empty on publish: this relay does not forward from relays'
  if (message.trace?.received.length) throw invalidFormat(why, 'trace.received')
}

/** Where a message goes: `mailboxes` undefined (404) without an open one; `held` may hold it. */
type Targets = { topic: boolean; mailboxes: string[] | undefined; held: string[] }

/** `perSender`: the per-sender limit (PROFILE §6), charged for verified new messages only. */
export function publisher(
  ctx: RelayContext,
  retentionMs: number,
  perSender: (from: string) => number,
) {
  const { store } = ctx
  const options: ReceiveContext = {
    resolver: ctx.resolver,
    // The date window of PROFILE §6. Duplicates are the store's (see `publish`).
    replay: new ReplayGuard({ now: ctx.now }),
    now: ctx.now,
    requireEd25519: true,
    checkMessage: checkNotForwarded,
    perSender,
  }

  /** `outcome.duplicate` is set when the answer is a 202 for a copy already stored (metrics). */
  return async function publish(
    request: Request,
    outcome?: { duplicate?: boolean },
  ): Promise<HttpReply> {
    const body = await jsonBody(request, PROFILE.maxBodyBytes)
    if (!(body instanceof Uint8Array)) return body
    const receivedAt = ctx.now()
    let targets: Targets | undefined
    // A copy every target mailbox holds, or remembers after an ack or expiry, is answered 202
    // before the per-sender limit is charged: a replay cannot spend its sender's quota, nor be
    // delivered again (PROFILE §9).
    const isDuplicate = async (message: Message) => {
      targets = await targetsOf(message)
      return store.isDuplicate({
        mailboxes: targets.held,
        from: message.from.agent,
        messageId: message.message_id,
        now: receivedAt,
      })
    }
    const result = await receive(
      { body, idempotencyKey: request.headers.get('idempotency-key') },
      { ...options, now: () => receivedAt, isDuplicate },
    )
    if (result.status === 'refused') {
      const { error } = result
      return errorReply(error.code, error.message, { retryAfter: error.retryAfter })
    }
    const message = result.message
    if (result.status === 'duplicate') {
      if (outcome) outcome.duplicate = true
      return acceptedReply(message.message_id)
    }
    // 11. Mailboxes: told only now, after the signature verified.
    targets ??= await targetsOf(message)
    const { mailboxes, topic } = targets
    if (mailboxes === undefined) {
      return errorReply('not_found', `this relay holds no open mailbox for ${message.to.agent}`)
    }
    if (mailboxes.length === 0) return acceptedReply(message.message_id)
    return save(message, mailboxes, topic, receivedAt, storageBucketOf(request), outcome)
  }

  async function targetsOf(message: Message): Promise<Targets> {
    const to = message.to.agent
    if (to === undefined) {
      const subscribers = await store.topicSubscribers(message.to.topic)
      return { topic: true, mailboxes: subscribers, held: subscribers }
    }
    const { kind } = parseAgentId(to, 'to.agent')
    if (kind !== 'did:key' && kind !== 'url')
      return { topic: false, mailboxes: undefined, held: [] }
    const open = (await store.mailboxState(to)) === 'open'
    return { topic: false, mailboxes: open ? [to] : undefined, held: [to] }
  }

  /** 12. Trace, before the message becomes visible. 13. Durable store, then 202. */
  async function save(
    message: Message,
    mailboxes: string[],
    topic: boolean,
    receivedAt: number,
    bucket: string | undefined,
    outcome: { duplicate?: boolean } | undefined,
  ): Promise<HttpReply> {
    const from = message.from.agent
    const by = `relay:${ctx.baseUrl}`
    const entry = { by, with: 'https/agentmsg-1', at: formatTimestamp(receivedAt), from }
    const traced: Message = { ...message, trace: { ...message.trace, received: [entry] } }
    const date = parseTimestamp(message.date, 'date')
    const ttl = message.ttl_seconds
    const expiresAt = Math.min(receivedAt + retentionMs, date + (ttl ?? Infinity) * 1000)
    // Quotas count JCS(message without trace) (PROFILE §9): what the sender signed and sized.
    const { trace: _trace, ...signed } = message
    const json = JSON.stringify(traced)
    const messageId = message.message_id
    // Pushed to live streams once decided, while the commit runs (uncommitted.ts).
    const live = ctx.uncommitted?.track({ from, messageId, json, expiresAt })
    let results
    try {
      const input = {
        mailboxes,
        from,
        messageId,
        json,
        bytes: canonicalSize(signed),
        receivedAt,
        expiresAt,
        // Remembered as long as a receiver's replay memory: widening the date window widens it.
        forgetAt: date + PROFILE.relayForgetMs,
        // One subscriber that never reads cannot close a topic: full mailboxes are skipped.
        skipFull: topic,
        // Charged to the client address it came from (PROFILE §9): one cannot fill the relay.
        ...(bucket !== undefined && { bucket }),
      }
      results = await store.publish(input, live)
    } catch (error) {
      live?.done(error)
      if (error instanceof MailboxFullError || error instanceof RelayStorageFullError) {
        // The error never names a mailbox, its owner or the client address (PROFILE §9).
        return errorReply('unavailable', 'the relay cannot store this message now; retry later', {
          retryAfter: ctx.options.mailboxFullRetryAfter ?? 60,
        })
      }
      throw error
    }
    // Pushed early: the feeds were told then, and read it in the store from now on.
    const pushed = live?.done() === true
    for (const r of results) if (!r.duplicate && !r.full && !pushed) ctx.notifier.notify(r.mailbox)
    // Two copies raced past `isDuplicate`: the store kept one; the other is the duplicate.
    if (outcome && results.length > 0 && results.every((r) => r.duplicate)) outcome.duplicate = true
    return acceptedReply(message.message_id)
  }
}
