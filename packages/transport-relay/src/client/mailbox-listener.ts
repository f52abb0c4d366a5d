/**
 * Listening on one of the agent's relays (PROFILE §9): one subscription, kept in storage, and a
 * stream from the stored cursor into the receive pipeline, retried with backoff while down.
 */
import { type DeliveryHandler, isAgentMsgError, type TransportComponents } from '@agentmsg/core'
import { Backoff, sleep } from '@agentmsg/core/http'
import { STREAM_BACKOFF } from './http.js'
import { relayCore } from './relay-core.js'
import { relayError } from './relay-error.js'
import type { RelayTransportOptions } from './relay-transport.js'
import { isFatal } from './stream.js'
import type { RelayEntry, StreamHandle } from './stream-types.js'

/** Storage keys of one relay's state, in the transport's storage. */
export function mailboxKeys(relayUrl: string): { subscription: string; cursor: string } {
  const enc = encodeURIComponent(relayUrl)
  return { subscription: `sub/${enc}`, cursor: `cursor/${enc}` }
}

/** Accepted, duplicate and refused-for-good entries complete (acked); refused for now, they stay. */
export function pipelineHandler(receive: DeliveryHandler) {
  return async (entry: RelayEntry): Promise<void> => {
    const outcome = await receive({ body: entry.value, transport: 'relay' })
    if (outcome.status === 'refused' && outcome.retry) throw outcome.error
  }
}

export class MailboxListener {
  readonly #client: ReturnType<typeof relayCore>
  readonly #storage: TransportComponents['storage']
  readonly #report: (error: unknown) => void
  readonly #keys: { subscription: string; cursor: string }
  readonly #stop = new AbortController()
  #stream: StreamHandle | undefined
  #running: Promise<void> | undefined

  /** @throws AgentMsgError `invalid_format` for a URL that is no relay base URL (PROFILE §9) */
  constructor(
    relayUrl: string,
    private readonly options: RelayTransportOptions,
    components: TransportComponents,
    private readonly receive: DeliveryHandler,
    report: (error: unknown) => void,
  ) {
    const { agentId: agent, signer } = components
    const { fetch, streamFetch, WebSocket, timeoutMs } = options
    this.#client = relayCore({ relayUrl, agent, signer, fetch, streamFetch, WebSocket, timeoutMs })
    this.#storage = components.storage
    // Every failure names its relay: an agent listens on several.
    this.#report = (error) => report(relayError(relayUrl, error))
    this.#keys = mailboxKeys(relayUrl)
  }

  /** After the first try to open the mailbox; rejects when the relay or the address policy refused. */
  async start(): Promise<void> {
    let opened = false
    try {
      opened = await this.#open()
    } catch (error) {
      if (this.#stop.signal.aborted) return
      if (isFatal(error)) throw relayError(this.#client.relayUrl, error)
      this.#report(error)
    }
    this.#running = this.#run(opened)
  }

  async close(): Promise<void> {
    this.#stop.abort()
    await this.#stream?.close()
    await this.#running
  }

  /** Subscribe unless a subscription is stored. Resolves `true` when the mailbox is open. */
  async #open(): Promise<boolean> {
    if ((await this.#storage.get(this.#keys.subscription)) !== undefined) return true
    const { subscriptionId } = await this.#client.subscribe({ signal: this.#stop.signal })
    await this.#storage.put(this.#keys.subscription, subscriptionId)
    return true
  }

  async #run(opened: boolean): Promise<void> {
    const signal = this.#stop.signal
    const settings = { ...STREAM_BACKOFF, ...this.options.backoff }
    const backoff = new Backoff(settings)
    while (!signal.aborted) {
      const started = Date.now()
      const run = { moved: false, failure: undefined as unknown }
      try {
        if (!opened) opened = await this.#open()
        run.failure = await this.#streamOnce(run)
      } catch (error) {
        if (signal.aborted) return
        this.#report(error)
        run.failure = error
      }
      if (signal.aborted) return
      // The relay forgot the mailbox (restored from an old backup): open it again.
      if (isAgentMsgError(run.failure) && run.failure.code === 'not_found') {
        await this.#storage.delete(this.#keys.subscription).catch(this.#report)
        opened = false
      }
      // A stream that moved the cursor, or stayed up a while, was a success: start over.
      if (run.moved || Date.now() - started >= settings.capMs) backoff.reset()
      await sleep(backoff.next(), signal)
    }
  }

  /** One stream until it stops: resolves with nothing when closed, or with the fatal error. */
  async #streamOnce(run: { moved: boolean }): Promise<unknown> {
    const after = await this.#storage.get(this.#keys.cursor)
    if (this.#stop.signal.aborted) return undefined
    this.#stream = this.#client.stream(pipelineHandler(this.receive), {
      mode: this.options.mode ?? 'sse',
      ...(this.options.backoff ? { backoff: this.options.backoff } : {}),
      ...(typeof after === 'string' ? { after } : {}),
      onCursor: (cursor) => {
        run.moved = true
        return this.#storage.put(this.#keys.cursor, cursor)
      },
      onError: this.#report,
      signal: this.#stop.signal,
    })
    return this.#stream.done.then(
      () => undefined,
      (error: unknown) => error,
    )
  }
}
