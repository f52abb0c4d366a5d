/** The receive pipeline's types (PROFILE §6): what a caller gives `receive`, what it answers. */
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
  /** Finds the signing keys (PROFILE §4). */
  resolver: KeyResolver
  /** Date window and TTL; duplicate ids unless {@link isDuplicate} is given. */
  replay: ReplayGuard
  /** Auth levels (PROFILE §5). Absent at a relay, which takes no part in conversations. */
  levels?: AuthLevelTracker
  /** The clock, epoch ms. */
  now: () => number
  /** @default PROFILE.keyTransitionMs */
  transitionMs?: number
  /** Where Ed25519 verification runs: the pool verifies deliveries in parallel. @default 'pool' */
  crypto?: CryptoMode
  /** Who may be addressed (else `invalid_format`). Absent: anyone (a relay). */
  addressee?: { agent: string; topics?: ReadonlySet<string> }
  /** The caller's own format rules, run with validation (before the signature is looked at). */
  checkMessage?: (message: Message) => void
  /** A relay's rule: an Ed25519 signature of `from.agent` must verify (PROFILE §9). */
  requireEd25519?: boolean
  /** Whether (from, message_id) was seen. @default `replay.isDuplicate` (a relay asks its store) */
  isDuplicate?: (message: Message) => Promise<boolean>
  /** The per-sender limit, charged for verified new messages: seconds to wait, 0 to go on. */
  perSender?: (from: string) => number
  /** Opens sealed bodies (PROFILE §8). Absent: an agent refuses them, a relay passes them on. */
  opener?: ReceiveOpener
}

/** This agent's id and the seeds of its own keys, to open sealed parts (PROFILE §8). */
export interface ReceiveOpener {
  agent: string
  /** The seed of the key a part was sealed to (a retired key's too, while kept), or undefined. */
  ed25519Seed: (keyId: string) => Uint8Array | undefined
}

/** One message to receive: raw bytes (parsed strictly) or a JSON value from an envelope. */
export interface ReceiveInput {
  body: Uint8Array | unknown
  /** The HTTP `Idempotency-Key`: must equal `message_id` (PROFILE §6). */
  idempotencyKey?: string | null
}

/** A message that passed every step. */
export interface ReceivedOk {
  status: 'accepted'
  /** The message to process: a sealed body is replaced by the opened one. */
  message: Message
  sealed: Sealed
  /** The message as signed (sealed body kept): what to store or forward. */
  signed: Message
  verified: VerifyResult
  level: AuthLevel
  source: KeySource
  /** The auth-level decision to commit once accepted for good (absent at a relay). */
  decision?: AuthDecision
  /** A version or phase we do not speak: accepted (202), answered with an error phase message. */
  protocolError?: ProtocolError
}

/** A refusal and its step; `message` once validated, `verified` once the signature was checked. */
export interface ReceiveRefusal {
  status: 'refused'
  error: AgentMsgError
  step: ReceiveStep
  message?: Message
  verified?: boolean
}

/** `duplicate`: received before, accepted again (202), not processed again. */
export type ReceiveResult = ReceivedOk | { status: 'duplicate'; message: Message } | ReceiveRefusal

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

/** What the application learns about an accepted message besides the message. */
export interface ReceivedInfo {
  /** The level it verified at (PROFILE §5). */
  level: AuthLevel
  /** Where the verifying key came from. */
  source: KeySource
  /** The verifying key's full id. */
  keyId: string
  /** Pinned, introduced or accepted before: a level does not say whether you know the sender. */
  knownContact: boolean
  /** The transport that delivered it (`https`, `relay`, a custom one's protocol). */
  transport: string
  /** Its body was sealed (PROFILE §8); the message handed over carries the opened body. */
  sealed: Sealed
}

/**
 * Whether a body came sealed (PROFILE §8): `true`, opened; `'not-for-me'`, a topic message
 * sealed for other members, handed over as signed (it cannot be opened here).
 */
export type Sealed = boolean | 'not-for-me'

/** Where an error phase message goes (PROFILE §7): never to an address taken from the message. */
export interface ErrorReplyTarget {
  agent: string
  /** From the agent's own identity document. */
  inbox?: string
  /** From the verified message's `from.relays`: how a did:key sender is reached. */
  relays?: string[]
}

/** Sends the error phase messages of PROFILE §7 on the receiver's behalf. */
export interface ErrorReplySender {
  /** Sign `message` as this agent and deliver it to `to`. */
  send(message: UnsignedMessage, to: ErrorReplyTarget): Promise<void>
}

/** Options for `createReceiver`. */
export interface ReceiverOptions {
  /** This agent's id: messages must be addressed to it, or to one of `topics`. */
  agentId: string
  /** Topics it takes messages for; a `Set` is read live (add a topic once subscribed). */
  topics?: readonly string[] | ReadonlySet<string>
  resolver: KeyResolver
  /** Keeps accepted messages until handled (PROFILE §6), and replay and levels. @default memory */
  storage?: Storage
  replayGuard?: ReplayGuard
  authLevels?: AuthLevelTracker
  /** The application; runs from a bounded queue after the message was accepted. */
  onMessage: (message: Message, info: ReceivedInfo) => Promise<void>
  /** Failures nobody else sees. @default console.error */
  onError?: (error: unknown) => void
  /** Sends PROFILE §7 error phase messages. @default none are sent */
  errorReplies?: ErrorReplySender
  /** A URL agent's identity document, to route error replies. @default the resolver's `document()` */
  identityOf?: (agent: string) => Promise<IdentityDocument | undefined>
  /** Accepted messages not yet processed; beyond, deliveries get `unavailable`. @default 1000 */
  maxQueue?: number
  /** `Retry-After` seconds when the queue is full or closing. @default 5 */
  queueRetryAfter?: number
  /** `onMessage` calls at once; 1 keeps arrival order. @default 1 */
  concurrency?: number
  transitionMs?: number
  /** @default 'pool', see {@link ReceiveContext.crypto} */
  crypto?: CryptoMode
  now?: () => number
  /** Opens sealed bodies for this agent (its `agent` is `agentId`). @default sealed bodies refused */
  opener?: ReceiveOpener
}

/** The receive side of one agent: hand it every inbound message, from every transport. */
export interface Receiver {
  /** Run the pipeline for one delivery, persist and queue it; the transport acts on the outcome. */
  readonly receive: DeliveryHandler
  /** The date window and duplicate memory it checks with. */
  readonly replayGuard: ReplayGuard
  /** The conversation levels it keeps (PROFILE §5). */
  readonly authLevels: AuthLevelTracker
  /** Accepted messages not yet processed. */
  readonly pending: number
  /** Resolves once no accepted message waits for or is in `onMessage`. */
  idle(): Promise<void>
  /** Settles once messages persisted by an earlier run were queued again. */
  readonly ready: Promise<void>
  /** Refuse new deliveries (`unavailable`) and, unless `drain: false`, wait for the queue. */
  close(options?: { drain?: boolean }): Promise<void>
}
