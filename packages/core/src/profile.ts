/**
 * Every number PROFILE.md fixes (the section is in the comment): widening one here (the replay
 * window, say) widens it everywhere, the relay's dedupe memory included.
 */
const KiB = 1024
const MiB = 1024 * KiB
const MINUTE = 60_000
const DAY = 1440 * MINUTE

/** §3 signatures, §4 retired keys, §6 dates, §9 agent auth: how far ahead of our clock. */
const clockSkewMs = 5 * MINUTE
/** §6: messages older than this are stale (7 days in a relay + 24 h of retries). */
const dateWindowMs = 8 * DAY
/** §6: message ids are remembered this long after their date. */
const replayMemoryMs = dateWindowMs + 10 * MINUTE
/** §6: `JCS(message without trace)` at most. */
const maxMessageBytes = MiB
/** §6: room for `trace` and the envelope above a message. */
const envelopeBytes = 64 * KiB

export const PROFILE = {
  /** §1: nesting depth of a message, objects and arrays counted, the top level is 1. */
  maxJsonDepth: 64,
  clockSkewMs,

  /** §4: a retired key still verifies this long after its retirement (default). */
  keyTransitionMs: 14 * DAY,
  /** §4: identity documents: timeout, size, redirects, default cache time, refetch interval. */
  documentTimeoutMs: 5_000,
  documentMaxBytes: 64 * KiB,
  documentMaxRedirects: 3,
  documentCacheMs: 60 * MINUTE,
  documentRefetchMs: MINUTE,
  /** §4: byte caps on what peers answer: a reply or document, a retrieve page, one stream event. */
  replyMaxBytes: 64 * KiB,
  pageMaxBytes: 8 * MiB + envelopeBytes,
  eventMaxBytes: maxMessageBytes + envelopeBytes,
  /** §4: timeout of a request to a peer (streams: the §9 comment cadence, with margin). */
  requestTimeoutMs: 30_000,

  /** §6 sizes: the canonical message, and the request body (message, trace, envelope). */
  maxMessageBytes,
  maxBodyBytes: maxMessageBytes + envelopeBytes,
  dateWindowMs,
  replayMemoryMs,
  /** §6 default limits: per client address (IPv6 per /64), per verified sender. */
  perAddress: { perMinute: 600, burst: 100 },
  perSender: { perMinute: 60, burst: 20 },
  ipv6BucketBits: 64,
  /** §6 slow and parallel clients. */
  headersTimeoutMs: 10_000,
  bodyTimeoutMs: 30_000,
  readsPerAddress: 8,
  readsTotal: 128,
  /** §6 retries: full-jitter backoff from 1 s, ×2, capped at 1 h, for 24 h. */
  retryBaseMs: 1_000,
  retryCapMs: 60 * MINUTE,
  retryDeadlineMs: DAY,
  attemptTimeoutMs: 30_000,

  /** §7: at most one error phase message a minute per peer. */
  errorReplyIntervalMs: MINUTE,

  /** §9 mailbox quota, one sender's share of it, the relay-wide cap. */
  mailboxMessages: 10_000,
  mailboxBytes: 256 * MiB,
  senderShare: 1 / 4,
  relayBytes: 10 * 1024 * MiB,
  /** §9: stored bytes per client address bucket (IPv6 /48), at most this share of the cap. */
  storageBucketShare: 0.05,
  storageIpv6BucketBits: 48,
  /** §9 streams and subscriptions. */
  streamsPerAgent: 4,
  subscriptionsPerAgent: 16,
  streamsPerAddress: 64,
  streamUnsentBytes: maxMessageBytes + envelopeBytes,
  streamStallMs: 60_000,
  relayUnsentBytes: 256 * MiB,
  streamCommentMs: 15_000,
  /** §9: kept until acknowledged, this long after receipt, or its TTL. */
  relayRetentionMs: 7 * DAY,
  /** §9: dedupe as long as a receiver's replay memory; from receipt, plus the skew. */
  relayForgetMs: replayMemoryMs,
  relayForgetAfterReceiptMs: replayMemoryMs + clockSkewMs,
  /** §9 retrieve: default and largest page, bytes per page; acknowledgements per request. */
  pageLimit: 100,
  maxPageLimit: 500,
  pageBytes: 8 * MiB,
  maxAcks: 500,
  /** §9 agent auth: (keyid, nonce) remembered this long. */
  nonceMemoryMs: 10 * MINUTE,
} as const
