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

/** Every number the wire profile fixes, each with its PROFILE.md section. */
export const PROFILE = {
  /** §1: nesting depth of a message, objects and arrays counted, the top level is 1. */
  maxJsonDepth: 64,
  clockSkewMs,

  /** §4: a retired key still verifies this long after its retirement (default). */
  keyTransitionMs: 14 * DAY,
  /** §4: an identity document fetch times out after this. */
  documentTimeoutMs: 5_000,
  /** §4: an identity document's size cap. */
  documentMaxBytes: 64 * KiB,
  /** §4: redirects followed, same origin only. */
  documentMaxRedirects: 3,
  /** §4: a document's cache time when `Cache-Control` sets none. */
  documentCacheMs: 60 * MINUTE,
  /** §4: an unknown key refetches a document at most this often. */
  documentRefetchMs: MINUTE,
  /** §4: byte cap on a peer's reply or document. */
  replyMaxBytes: 64 * KiB,
  /** §4: byte cap on a relay's retrieve page. */
  pageMaxBytes: 8 * MiB + envelopeBytes,
  /** §4: byte cap on one stream event or frame. */
  eventMaxBytes: maxMessageBytes + envelopeBytes,
  /** §4: timeout of a request to a peer (streams: the §9 comment cadence, with margin). */
  requestTimeoutMs: 30_000,

  maxMessageBytes,
  /** §6: a request body: the message, its trace and envelope. */
  maxBodyBytes: maxMessageBytes + envelopeBytes,
  dateWindowMs,
  replayMemoryMs,
  /** §6: default limit per client address bucket: requests a minute, burst. */
  perAddress: { perMinute: 600, burst: 100 },
  /** §6: default limit per verified sender: messages a minute, burst. */
  perSender: { perMinute: 60, burst: 20 },
  /** §6: IPv6 clients share a rate-limit bucket per /64. */
  ipv6BucketBits: 64,
  /** §6: request headers must arrive within this. */
  headersTimeoutMs: 10_000,
  /** §6: a body must arrive within this of its headers. */
  bodyTimeoutMs: 30_000,
  /** §6: bodies read at once per client address bucket. */
  readsPerAddress: 8,
  /** §6: bodies read at once overall. */
  readsTotal: 128,
  /** §6 retries: full-jitter backoff from 1 s, ×2. */
  retryBaseMs: 1_000,
  /** §6: the backoff's cap. */
  retryCapMs: 60 * MINUTE,
  /** §6: retries stop this long after the first attempt. */
  retryDeadlineMs: DAY,
  /** §6: timeout of one delivery attempt. */
  attemptTimeoutMs: 30_000,

  /** §7: at most one error phase message a minute per peer. */
  errorReplyIntervalMs: MINUTE,

  /** §9: messages a mailbox holds at most. */
  mailboxMessages: 10_000,
  /** §9: bytes a mailbox holds at most. */
  mailboxBytes: 256 * MiB,
  /** §9: the share of a mailbox one sender may hold. */
  senderShare: 1 / 4,
  /** §9: the relay-wide storage cap. */
  relayBytes: 10 * 1024 * MiB,
  /** §9: stored bytes per client address bucket, at most this share of the cap. */
  storageBucketShare: 0.05,
  /** §9: IPv6 clients share a storage bucket per /48. */
  storageIpv6BucketBits: 48,
  /** §9: open SSE or WebSocket streams per agent. */
  streamsPerAgent: 4,
  /** §9: subscriptions per agent. */
  subscriptionsPerAgent: 16,
  /** §9: open streams per client address bucket. */
  streamsPerAddress: 64,
  /** §9: unsent data held per stream. */
  streamUnsentBytes: maxMessageBytes + envelopeBytes,
  /** §9: a stream without progress while data waits is closed. */
  streamStallMs: 60_000,
  /** §9: unsent stream data relay-wide. */
  relayUnsentBytes: 256 * MiB,
  /** §9: an SSE comment line at least this often. */
  streamCommentMs: 15_000,
  /** §9: kept until acknowledged, this long after receipt, or its TTL. */
  relayRetentionMs: 7 * DAY,
  /** §9: dedupe as long as a receiver's replay memory. */
  relayForgetMs: replayMemoryMs,
  /** §9: the same, counted from receipt (plus the skew). */
  relayForgetAfterReceiptMs: replayMemoryMs + clockSkewMs,
  /** §9 retrieve: the default page size. */
  pageLimit: 100,
  /** §9 retrieve: the largest page size. */
  maxPageLimit: 500,
  /** §9 retrieve: bytes per page. */
  pageBytes: 8 * MiB,
  /** §9: acknowledgements per request. */
  maxAcks: 500,
  /** §9 agent auth: (keyid, nonce) remembered this long. */
  nonceMemoryMs: 10 * MINUTE,
} as const
