/**
 * The browser-facing entries check-build.mjs bundles and measures, with their budgets and caps
 * (gzip bytes). Sizes in the comments are min+gzip at level 9, as check-build reports them:
 * budgets and caps judge the figure as served (each file of the split bundle gzipped on its
 * own, what a browser downloads); sizes written before that change are one gzip stream.
 */
const KB = 1024

/**
 * Browser-facing entries. `file` is bundled as is (all its exports kept); `contents` is a virtual
 * entry resolved from the repository root, for "what an app that uses only these pays".
 * A row whose package directory does not exist yet is reported as skipped; once the package
 * exists, a missing dist file is an error.
 * `budget` (gzip bytes, as served) is noted as information when passed; `cap` (gzip bytes, as
 * served) fails the build.
 */
export const BROWSER_ENTRIES = [
  {
    name: '@agentmsg/core',
    pkg: 'packages/core',
    file: 'packages/core/dist/index.js',
    // The whole barrel (identity documents, resolvers, trust state, noble fallback): what an app
    // pays that imports everything. Guards growth; the figure is the next row.
    budget: 30 * KB,
    cap: 40 * KB,
  },
  {
    // The figure the issue asks for: signing, verifying, did:key and JCS only (aim 15 KB).
    name: 'core: sign+verify+did:key+canonicalize',
    pkg: 'packages/core',
    contents: `export { signMessage, didKeyFromPublicKey, publicKeyFromDidKey, canonicalize } from '@agentmsg/core'
export { verifyMessage } from '@agentmsg/core/receive'`,
    budget: 15 * KB,
    cap: 20 * KB,
  },
  {
    // What inboxes and relays put in front of the pipeline (per-address limits, replies, RFC 9421
    // verification, the address policy). A browser loads it only to serve an inbox; 17.9 KB
    // when it became an entry of its own, most of it the shared crypto and encodings.
    name: '@agentmsg/core/server',
    pkg: 'packages/core',
    file: 'packages/core/dist/server.js',
    budget: 20 * KB,
    cap: 24 * KB,
  },
  {
    // Relay agent auth, shared by the relay client and server (with `structured-headers`);
    // 23.4 KB from source, most of it the platform crypto provider.
    name: '@agentmsg/core/http',
    pkg: 'packages/core',
    file: 'packages/core/dist/http.js',
    budget: 25 * KB,
    cap: 32 * KB,
  },
  {
    // Sealed boxes (PROFILE §8): XSalsa20-Poly1305 (@noble/ciphers), BLAKE2b, the Ed25519 →
    // X25519 map shared with the did:key documents (@noble/ed25519); X25519 is WebCrypto's, with
    // @noble/curves a lazy fallback (`#x25519`). Only apps that seal or open pay for it: 30.6 KB
    // alone with @noble/curves up front (about 11 KB of it JCS, strict JSON and encodings shared
    // with the root entry), 23.4 KB with it lazy; the relay-only agent below must not import it.
    name: '@agentmsg/core/sealed-box',
    pkg: 'packages/core',
    file: 'packages/core/dist/sealed-box.js',
    budget: 30 * KB,
    cap: 26 * KB,
  },
  {
    // The sender and the web-standard inbox handler; `./node` is Node-only by design.
    name: '@agentmsg/transport-https',
    pkg: 'packages/transport-https',
    file: 'packages/transport-https/dist/index.js',
    budget: 30 * KB,
    cap: 45 * KB,
  },
  {
    name: '@agentmsg/transport-relay (client)',
    pkg: 'packages/transport-relay',
    file: 'packages/transport-relay/dist/index.js',
    budget: 25 * KB,
    cap: 35 * KB,
  },
  {
    // The whole client entry; its receive side, URL-agent identity and the https transport are
    // lazy chunks (see the next row).
    name: '@agentmsg/client',
    pkg: 'packages/client',
    file: 'packages/client/dist/index.js',
    budget: 20 * KB,
    // 40.7 KB before issue 12; 18.1 KB after it.
    cap: 20 * KB,
  },
  {
    // The figure the issue asks for: a browser agent that only uses relays. Up front: creating
    // the agent (identity, storage, transports); the core it needs comes through `/http` alone,
    // which holds nothing only sending, receiving or serving needs, because esbuild loads up
    // front every module an up-front module's imports reach (even through unused re-exports),
    // so importing core's root up front would load every part of core any lazy chunk uses.
    // Targets: 20 KB up front, 30 KB all loaded (normal use, without the sealed-box chunks).
    name: 'browser relay-only agent (client + core + relay client + IndexedDB)',
    pkg: 'packages/client',
    contents: `export { createAgent } from '@agentmsg/client'
export { indexedDbStorage } from '@agentmsg/storage-indexeddb'`,
    budget: 20 * KB,
    // 41.9 KB before issue 12, everything up front (history: 32.8 KB before the one receive
    // pipeline, 38.3 KB after it, 40.0 KB with the hardening, 41.5 KB with sealing on send).
    // Issue 12: 19.4 KB once the receive side, relay streams, identity documents and the https
    // transport are lazy and imported through narrow entries; 19.3 KB with base58 and the
    // RFC 8941 fields written by hand (multiformats and structured-headers gone).
    // As served: 22.8 KB in 12 files (19.5 KB one stream) when measured so; 18.3 KB in 11 files
    // (15.8 KB) once the up-front code imports core through `/http` only (the root's re-exports
    // used by any lazy chunk, signing and RFC 8785 among them, no longer load up front).
    cap: 20 * KB,
    // Up front + every lazy chunk of no group below: what a did:key agent on WebCrypto with SSE
    // streams and IndexedDB loads when it starts receiving (relay streams, acks, the receive
    // pipeline: verify, replay, auth levels, key store). 39.1 KB when added; 35.6 KB with the
    // exact JSON parser, error replies and URL-agent identity in chunks of their own. What stops
    // the 30 KB target is code every receiving agent runs (issue 12 report): the receiver, replay
    // guard and auth levels (~11 KB minified), verification (~6 KB), message validation, JCS,
    // agent ids, the relay streams and acks (~10 KB) and IndexedDB.
    allLoaded: {
      name: '  └ all loaded in normal use (+ relay streams and the receive pipeline)',
      budget: 30 * KB,
      // 35.8 KB before the consolidation, 39.1 KB after it: the send path moved to a lazy chunk
      // of normal use (up front fell from 19.4 to 18.8 KB), and the key store now validates an
      // introduced identity document itself, so document validation loads with the receive side.
      // Within the 10% the consolidation allowed; bringing it down is the performance work's.
      // As served: 47.3 KB in 21 files when measured so (40.0 KB one stream); 48.0 KB in 24
      // files once signing and RFC 8785 left the up-front chunks for lazy ones of normal use.
      cap: 50 * KB,
    },
    // Lazy chunks loaded only in some situations, by a module only they hold; none may be
    // loaded up front or in normal use. Each gets a row: all loaded + its chunks.
    lazyGroups: [
      {
        // Sealing on send (PROFILE §8, sealed by default through untrusted relays) and opening
        // on receive import `@agentmsg/core/sealed-box`; XSalsa20-Poly1305 is theirs alone.
        what: 'sealed-box',
        name: '  └ + the sealed-box chunks (loaded on the first seal or open)',
        marker: /^node_modules\/@noble\/ciphers\//,
        required: true,
        // 66.1 KB when added (41.5 up front + 25.1 KB in 4 chunks: XSalsa20-Poly1305, X25519,
        // BLAKE2b, Ed25519 → X25519). Issue 12: counted on top of all loaded (62.4 KB), the
        // chunks holding the exact JSON parser too, which opening a body runs synchronously.
        // Budget: all loaded's target + 25 KB. 63.99 KB before groups; 64.74 KB with them (the
        // agent's topic methods up front, a topic message not for this agent in the pipeline):
        // the cap moved by 1 KB for that capability. As served: 74.0 KB in 25 files when
        // measured so (64.8 KB one stream), 74.7 KB in 28 files after the `/http` change. 57.45 KB
        // one stream with X25519 on WebCrypto and @noble/curves in a fallback chunk of its own
        // (18.0 KB in 5 chunks: XSalsa20-Poly1305, BLAKE2b, @noble/ed25519 and SHA-512 for the
        // Ed25519 → X25519 maps).
        budget: 55 * KB,
        cap: 70 * KB,
      },
      {
        // `#x25519` (browser) imports `@noble/curves` only where WebCrypto lacks X25519
        // (PROFILE §8 sealing; packages/core/src/sealed-box/x25519.web.ts).
        what: 'noble X25519 fallback (WebCrypto without X25519)',
        marker: /^node_modules\/@noble\/curves\//,
        required: true,
      },
      {
        // `#crypto-default` (browser) imports `@noble/ed25519` only where WebCrypto lacks
        // Ed25519 (test/browser/noble-fallback.spec.ts).
        what: 'noble Ed25519 fallback (WebCrypto without Ed25519)',
        marker: /^node_modules\/@noble\/ed25519\//,
        required: true,
      },
      {
        // Inboxes and URL agents: the https transport, the identity fetcher (ky), identity
        // documents, a URL agent's own document.
        what: 'https transport and identity documents (URL agents)',
        marker:
          /^packages\/(?:transport-https\/dist\/|core\/dist\/identity\.js$|client\/dist\/url-identity-)/,
        required: true,
      },
      {
        // The durable outbox (PROFILE §6): an inbox send stores its message before the first
        // attempt; a send through relays only once they failed for now, so it stays out of
        // normal use.
        what: 'the outbox (inbox sends, relay sends that failed for now)',
        marker: /^packages\/client\/dist\/outbox-/,
        required: true,
      },
      {
        // Topics and groups: subscribing, groups and publishing, loaded on first use.
        what: 'topics and groups (subscribe, publish)',
        marker:
          /^packages\/(?:client\/dist\/(?:topic-ops|publish)-|transport-relay\/dist\/topics-)/,
        required: true,
      },
      {
        what: 'WebSocket streams (mode: ws)',
        marker: /^packages\/transport-relay\/dist\/ws-lazy-/,
        required: true,
      },
      {
        // Input the strict parser's fast path cannot prove (to refuse, or unusual escapes).
        what: 'exact JSON parser (input the fast path cannot prove)',
        marker: /^packages\/core\/dist\/(?:parser-|m\/strict-json\/parser\.js)/,
        required: true,
      },
      {
        what: 'error phase replies (answering a refusal, PROFILE §7)',
        marker: /^packages\/core\/dist\/(?:error-replies-|m\/receive\/error-replies\.js)/,
        required: true,
      },
      {
        // What traces (core's telemetry-on.ts): loaded once OpenTelemetry's API is found or
        // handed in (`useOpenTelemetry`), never otherwise in a browser.
        what: 'OpenTelemetry tracing (an app that hands in the API)',
        marker: /^packages\/core\/dist\/telemetry-on-/,
        required: true,
      },
      {
        what: 'in-memory storage (no storage given)',
        marker: /^packages\/client\/dist\/memory-/,
        required: true,
      },
    ],
  },
  {
    name: '@agentmsg/storage-indexeddb',
    pkg: 'packages/storage-indexeddb',
    file: 'packages/storage-indexeddb/dist/index.js',
    budget: 5 * KB,
    cap: 10 * KB,
  },
]
