import { parseAgentId } from '../agent-id.js'
import { AuthLevelTracker } from '../auth-level.js'
import { AgentMsgError, type ErrorCode, type ErrorPhaseCode, isAgentMsgError } from '../errors.js'
import type { DeliveryOutcome, InboundDelivery } from '../interfaces/transport.js'
import { ReplayGuard } from '../replay.js'
import type { Message } from '../types.js'
import type { ErrorReplies } from './error-replies.js'
import { type Job, PendingStore } from './pending.js'
import { receive } from './pipeline.js'
import { WorkQueue } from './queue.js'
import type {
  ReceiveContext,
  ReceivedOk,
  ReceiveRefusal,
  Receiver,
  ReceiverOptions,
} from './types.js'

/** Verification failures that also earn a URL agent an error phase message (PROFILE §7). */
const UNVERIFIED_REPLY = new Set<ErrorCode>(['invalid_signature', 'unknown_sender', 'key_revoked'])

/** The receive side of one agent: persist → 202 → process (PROFILE §6), error replies (§7). */
export function createReceiver(options: ReceiverOptions): Receiver {
  return new AgentReceiver(options)
}

class AgentReceiver implements Receiver {
  readonly replayGuard: ReplayGuard
  readonly authLevels: AuthLevelTracker
  readonly ready: Promise<void>
  readonly #o: ReceiverOptions
  readonly #ctx: ReceiveContext
  readonly #onError: (error: unknown) => void
  readonly #pending: PendingStore | undefined
  readonly #queue: WorkQueue<Job>
  #replies: Promise<ErrorReplies> | undefined
  readonly #retryAfter: number
  #restored = false
  #closed = false
  #stopped = false

  constructor(o: ReceiverOptions) {
    parseAgentId(o.agentId, 'agentId')
    if (typeof o.onMessage !== 'function') throw new TypeError('onMessage is required')
    if (!o.resolver) throw new TypeError('resolver is required')
    if (o.opener && o.opener.agent !== o.agentId)
      throw new TypeError('opener.agent must be agentId')
    this.#o = o
    const now = o.now ?? Date.now
    this.#onError = o.onError ?? ((error) => console.error('agentmsg receiver:', error))
    const storage = o.storage ? { storage: o.storage } : {}
    this.replayGuard = o.replayGuard ?? new ReplayGuard({ ...storage, now })
    this.authLevels = o.authLevels ?? new AuthLevelTracker({ ...storage, now })
    this.#pending = o.storage ? new PendingStore(o.storage, now) : undefined
    this.#ctx = {
      resolver: o.resolver,
      replay: this.replayGuard,
      levels: this.authLevels,
      now,
      addressee: {
        agent: o.agentId,
        topics: o.topics instanceof Set ? o.topics : new Set(o.topics ?? []),
      },
      transitionMs: o.transitionMs,
      crypto: o.crypto,
      opener: o.opener,
    }
    this.#retryAfter = o.queueRetryAfter ?? 5
    this.#queue = new WorkQueue<Job>({
      capacity: o.maxQueue ?? 1000,
      concurrency: o.concurrency ?? 1,
      run: (job) => this.#process(job),
      onError: this.#onError,
    })
    this.ready = this.#restore()
      .catch((error: unknown) => this.#onError(error))
      .then(() => {
        this.#restored = true
      })
  }

  get pending(): number {
    return this.#queue.pending
  }

  idle(): Promise<void> {
    return this.#queue.drain()
  }

  readonly receive = async (delivery: InboundDelivery): Promise<DeliveryOutcome> => {
    if (this.#closed) return this.#unavailable('this receiver is shutting down')
    // Restored messages are remembered first, so a retry of one of them is a duplicate.
    if (!this.#restored) await this.ready
    try {
      return await this.#receive(delivery)
    } catch (error) {
      if (isAgentMsgError(error) && error.code !== 'internal_error') return refused(error)
      throw error
    }
  }

  async close(options: { drain?: boolean } = {}): Promise<void> {
    this.#closed = true
    if (options.drain === false) this.#stopped = true
    // Stopped: what is left stays in storage for the next receiver.
    if (this.#stopped) {
      this.#queue.stop()
      return
    }
    await this.ready
    await this.#queue.drain()
  }

  async #receive(delivery: InboundDelivery): Promise<DeliveryOutcome> {
    const ctx = delivery.perSender ? { ...this.#ctx, perSender: delivery.perSender } : this.#ctx
    const result = await receive(
      { body: delivery.body, idempotencyKey: delivery.idempotencyKey ?? null },
      ctx,
    )
    if (result.status === 'refused') {
      this.#answerRefusal(result)
      return refused(result.error)
    }
    const message = result.message
    if (result.status === 'duplicate') return { status: 'duplicate', messageId: message.message_id }
    if (result.protocolError) {
      // Accepted on the wire, answered with an error phase message, never processed (SPEC §7.3).
      if ((await this.replayGuard.checkAndRemember(message, delivery.bucket)) === 'new') {
        const { code, message: text } = result.protocolError
        this.#reply(message, code, text, true)
      }
      return { status: 'accepted', messageId: message.message_id }
    }
    return this.#accept(result, delivery)
  }

  // Room in the queue, then persist, then commit the level; only then `accepted` (PROFILE §6).
  async #accept(result: ReceivedOk, delivery: InboundDelivery): Promise<DeliveryOutcome> {
    const message = result.message
    if (this.#closed) return this.#unavailable('this receiver is shutting down')
    if (!this.#queue.reserve()) return this.#unavailable('the receive queue is full; retry later')
    const { level, source, sealed } = result
    const { transport } = delivery
    const job: Job = { message, level, source, sealed, keyId: result.verified.keyId, transport }
    let queued = false
    try {
      await this.#pending?.add(job)
      if (result.decision) await this.authLevels.commit(result.decision)
      // Exclusive per (from, id): of two copies racing through the pipeline, one is 'new'.
      if ((await this.replayGuard.checkAndRemember(message, delivery.bucket)) === 'new') {
        this.#queue.push(job, true)
        queued = true
      }
    } finally {
      if (!queued) {
        this.#queue.release()
        this.#pending?.remove(job).catch(this.#onError)
      }
    }
    return queued
      ? { status: 'accepted', messageId: message.message_id }
      : { status: 'duplicate', messageId: message.message_id }
  }

  // Imported on the first reply: most receivers never send one. Replies keep their order.
  #reply(original: Message, code: ErrorPhaseCode, text: string, verified: boolean): void {
    const sender = this.#o.errorReplies
    if (!sender) return
    const replies = (this.#replies ??= import('./error-replies.js').then(
      ({ ErrorReplies }) => new ErrorReplies(this.#o, sender, this.#onError, this.#ctx.now),
    ))
    replies.then(
      (r) => r.send(original, code, text, verified),
      (error: unknown) => {
        if (this.#replies === replies) this.#replies = undefined
        this.#onError(error)
      },
    )
  }

  #answerRefusal({ message, error, step }: ReceiveRefusal): void {
    const unverified = step === 'verify' && UNVERIFIED_REPLY.has(error.code)
    if (message && (unverified || (step === 'level' && error.code === 'insufficient_auth_level'))) {
      this.#reply(message, error.code as ErrorPhaseCode, error.message, !unverified)
    }
  }

  async #process(job: Job): Promise<void> {
    try {
      const { key: _key, message, ...info } = job
      const knownContact = await this.authLevels.isKnownContact(message.from.agent)
      await this.#o.onMessage(message, { ...info, knownContact })
    } finally {
      await this.#pending?.remove(job)
    }
  }

  async #restore(): Promise<void> {
    if (!this.#pending) return
    for (const job of await this.#pending.load(this.#onError)) {
      // Perhaps not yet remembered when the process stopped: a retry must be a duplicate.
      await this.replayGuard.remember(job.message.from.agent, job.message.message_id)
      // Already accepted: queued even beyond maxQueue.
      this.#queue.push(job, false)
    }
  }

  #unavailable(text: string): DeliveryOutcome {
    return refused(new AgentMsgError('unavailable', text, { retryAfter: this.#retryAfter }))
  }
}

function refused(error: AgentMsgError): DeliveryOutcome {
  return { status: 'refused', error, retry: error.shouldRetry() }
}
