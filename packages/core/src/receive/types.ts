/**
 * The one receive pipeline's types (PROFILE §6 order): what a caller gives `receive`, and what
 * it answers. The inbox, the relay's publish and the agent's relay path all call `receive`;
 * each keeps only the steps that are its own (HTTP limits, the relay's trace and store).
 */

import type { AuthDecision, AuthLevelTracker, KeySource } from '../auth-level.js'
import type { CryptoMode } from '../crypto/provider.js'
import type { AgentMsgError } from '../errors.js'
import type { IdentityDocument } from '../identity/document.js'
import type { Storage } from '../interfaces/storage.js'
import type { DeliveryHandler } from '../interfaces/transport.js'
import type { ProtocolError } from '../message.js'
import type { ReplayGuard } from '../replay.js'
import type { KeyResolver } from '../resolver.js'
import type { AuthLevel, Message, UnsignedMessage } from '../types.js'
import type { VerifyResult } from '../verify.js'

/** Everything `receive` needs besides the message: the receiver's state and its own rules. */
export interface ReceiveContext {
  /** Finds signing keys (PROFILE §4). */
  resolver: KeyResolver
  /** Date window and TTL (PROFILE §6); duplicate ids unless {@link isDuplicate} is given. */
  replay: ReplayGuard
  /**
   * Authentication levels per conversation and peer (PROFILE §5). Absent at a relay, which
   * does not take part in conversations: then no level step runs.
   */
  levels?: AuthLevelTracker
  /** The clock, epoch ms. */
  now: () => number
  /** Transition period of retired keys, ms (PROFILE §4). @default 14 days */
  transitionMs?: number
  /**
   * Where Ed25519 verification runs (see `CryptoMode`). Deliveries reach a receiver one
   * macrotask at a time from the network, where the thread pool verifies them in parallel
   * while the event loop reads the next ones (bench/inbox.mjs: 0.98× of its baseline pooled,
   * 0.94× on `auto`, 0.63× inline). @default 'pool'
   */
  crypto?: CryptoMode
  /**
   * Who may be addressed: the receiving agent's id and the topics it subscribed to. A message
   * to anyone else → `invalid_format` (PROFILE §6). Absent: any addressee (a relay).
   */
  addressee?: { agent: string; topics?: ReadonlySet<string> }
  /**
   * The caller's own format rules, run with validation so that a message breaking them is
   * refused `invalid_format` before its signature is looked at (a relay's empty
   * `trace.received`, PROFILE §9). Throws an `AgentMsgError` to refuse.
   */
  checkMessage?: (message: Message) => void
  /** A relay's rule: at least one Ed25519 signature of `from.agent` must verify (PROFILE §9). */
  requireEd25519?: boolean
  /**
   * Whether (from, message_id) was seen before. @default `replay.isDuplicate`
   * (a relay asks its store, whose dedupe is per mailbox, PROFILE §9)
   */
  isDuplicate?: (message: Message) => Promise<boolean>
  /**
   * The per-sender limit, charged only for verified new messages (PROFILE §6): seconds to wait,
   * 0 to go on. Absent: no limit.
   */
  perSender?: (from: string) => number
  /**
   * Opens sealed bodies addressed to this agent (PROFILE §8), after the signatures verified.
   * Absent: a receiver with an {@link addressee} (an agent) refuses sealed bodies
   * `invalid_format`; one without (a relay) passes them on unopened, as signed.
   */
  opener?: ReceiveOpener
}

/** This agent's id and the Ed25519 seeds of its own keys, to open sealed parts (PROFILE §8). */
export interface ReceiveOpener {
  agent: string
  /**
   * The seed of the key a part was sealed to (its full `key_id`, `<agent_id>#<fragment>`), or
   * undefined when it is not one of ours. A function, so a rotated key (PROFILE §4) still
   * opens parts sealed to the retired one while its seed is kept.
   */
  ed25519Seed: (keyId: string) => Uint8Array | undefined
}

/** One message to receive: raw bytes (parsed strictly here) or a JSON value from an envelope. */
export interface ReceiveInput {
  body: Uint8Array | unknown
  /** The HTTP `Idempotency-Key`, when there was one: must equal `message_id` (PROFILE §6). */
  idempotencyKey?: string | null
}

/** A message that passed every step. */
export interface ReceivedOk {
  status: 'accepted'
  /** The message to process: when its body was sealed, the opened body replaces it. */
  message: Message
  /** Whether the body was sealed and has been opened (PROFILE §8). */
  sealed: boolean
  /**
   * The message exactly as received and signed (its sealed body kept): what to store or forward,
   * since only this form verifies. The same object as `message` when it was not sealed.
   */
  signed: Message
  /** The signature verdict: level, key source, key id, every verified signature. */
  verified: VerifyResult
  /** Level of the best verified signature (PROFILE §5). */
  level: AuthLevel
  source: KeySource
  /** The auth-level decision to commit once the message is accepted for good (absent at a relay). */
  decision?: AuthDecision
  /**
   * Well formed and verified, but a version or phase this agent does not speak (SPEC §7.3):
   * accepted on the wire (202), answered with an error phase message, never processed.
   */
  protocolError?: ProtocolError
}

/** A message already received: accepted again (202), not processed again. */
export interface ReceivedDuplicate {
  status: 'duplicate'
  message: Message
}

/**
 * A refusal, with the step that refused. `message` is there when the refusal came after
 * validation (so an error phase message can answer it, PROFILE §7).
 */
export interface ReceiveRefusal {
  status: 'refused'
  error: AgentMsgError
  step: ReceiveStep
  message?: Message
  /** Whether `message`'s signature verified before the refusal (levels, per-sender limit). */
  verified?: boolean
}

export type ReceiveResult = ReceivedOk | ReceivedDuplicate | ReceiveRefusal

/** The steps, in PROFILE §6 order. */
export type ReceiveStep =
  | 'parse'
  | 'validate'
  | 'addressee'
  | 'idempotency'
  | 'size'
  | 'freshness'
  | 'verify'
  | 'ed25519'
  | 'duplicate'
  | 'per-sender'
  | 'open'
  | 'level'

/** What the application learns about an accepted message besides the message itself. */
export interface ReceivedInfo {
  /** Authentication level of the best verified signature (PROFILE §5). */
  level: AuthLevel
  /** Where that signature's key came from. */
  source: KeySource
  /** The full key id of that signature. */
  keyId: string
  /**
   * Pinned, introduced, or accepted before: a level says how strongly a key is bound to an id,
   * not whether you know the sender (PROFILE §5).
   */
  knownContact: boolean
  /** The transport that delivered it (`https`, `relay`, or a custom one's protocol). */
  transport: string
  /** Whether its body was sealed (PROFILE §8); the message handed over carries the opened body. */
  sealed: boolean
}

/** Where an error phase message should go; the caller signs and delivers it (PROFILE §7). */
export interface ErrorReplyTarget {
  agent: string
  /** The agent's inbox, taken from its own identity document (never from the message). */
  inbox?: string
  /** Relays from the verified message's `from.relays`: how a did:key sender is reached. */
  relays?: string[]
}

/** Sends the error phase messages of PROFILE §7 on the receiver's behalf. */
export interface ErrorReplySender {
  /** Sign `message` (unsigned, from `createErrorMessage`) as this agent and deliver it to `to`. */
  send(message: UnsignedMessage, to: ErrorReplyTarget): Promise<void>
}

/** Options for `createReceiver`: the stateful receive side of one agent. */
export interface ReceiverOptions {
  /** This agent's id: messages must be addressed to it, or to one of `topics`. */
  agentId: string
  /** Relay topics the agent subscribed to, accepted in `to.topic`. @default [] */
  topics?: readonly string[]
  /** Finds signing keys. */
  resolver: KeyResolver
  /**
   * Accepted messages are stored here before the transport is told `accepted` (the inbox's
   * 202, a relay's ack) and removed once `onMessage` settled; the next receiver on the same
   * storage processes what is left (PROFILE §6: persist → 202 → process). Also makes the
   * default replay guard and level tracker persistent.
   * @default undefined (memory only)
   */
  storage?: Storage
  /** @default new ReplayGuard({ storage, now }) */
  replayGuard?: ReplayGuard
  /** @default new AuthLevelTracker({ storage, now }) */
  authLevels?: AuthLevelTracker
  /** The application; runs from a bounded queue after the message was accepted. */
  onMessage: (message: Message, info: ReceivedInfo) => Promise<void>
  /** Failures nobody else sees. @default console.error */
  onError?: (error: unknown) => void
  /** Sends PROFILE §7 error phase messages. @default none are sent */
  errorReplies?: ErrorReplySender
  /** A URL agent's identity document, for routing error replies. @default the resolver's, when it has `document()` */
  identityOf?: (agent: string) => Promise<IdentityDocument | undefined>
  /** Most accepted messages not yet processed; beyond it deliveries are refused `unavailable`. @default 1000 */
  maxQueue?: number
  /** `Retry-After` seconds when the queue is full or the receiver closing. @default 5 */
  queueRetryAfter?: number
  /** `onMessage` calls at once; 1 keeps arrival order. @default 1 */
  concurrency?: number
  /** Transition period of retired keys, ms (PROFILE §4). @default 14 days */
  transitionMs?: number
  /** Where Ed25519 verification runs, see {@link ReceiveContext.crypto}. @default 'pool' */
  crypto?: CryptoMode
  /** The clock, epoch ms. @default Date.now */
  now?: () => number
  /**
   * Opens sealed bodies addressed to this agent (PROFILE §8), its `agent` being `agentId`.
   * @default none: sealed bodies are refused `invalid_format`
   */
  opener?: ReceiveOpener
}

/** The receive side of one agent: hand it every inbound message, from every transport. */
export interface Receiver {
  /** Run the pipeline for one delivery, persist and queue it; the transport acts on the outcome. */
  readonly receive: DeliveryHandler
  /** The replay guard and level tracker in use (shared with whoever needs them). */
  readonly replayGuard: ReplayGuard
  readonly authLevels: AuthLevelTracker
  /** Accepted messages not yet processed. */
  readonly pending: number
  /**
   * Resolves once no accepted message waits for `onMessage` or is inside it (at once when
   * none): e.g. a Worker's `ctx.waitUntil(receiver.idle())`, whose request ends with its answer.
   */
  idle(): Promise<void>
  /** Settles once messages persisted by an earlier run have been queued again. */
  readonly ready: Promise<void>
  /** Refuse new deliveries (`unavailable`) and, unless `drain: false`, wait for the queue. */
  close(options?: { drain?: boolean }): Promise<void>
}
