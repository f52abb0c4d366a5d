/**
 * RFC 8785 canonicalisation throughput against JSON.stringify of the same value, measured in the
 * same run so machine speed cancels out of the ratio. Signing and verification canonicalise every
 * message, so this is the SDK's hot path.
 *
 * Standalone (after `npm run build`): `node bench/canonicalize.mjs`.
 */

import { pathToFileURL } from 'node:url'

/** Minimum measured time per case; long enough for the JIT to settle and timers not to matter. */
const MIN_MS = 1000
const WARMUP_MS = 300

/** Deterministic pseudo-random numbers, so every run measures the same values. */
function rng(seed) {
  let s = seed >>> 0
  return () => {
    s = (s + 0x6d2b79f5) >>> 0
    let t = s
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const WORDS = [
  'hello',
  'agent',
  'über',
  'naïve',
  'relay',
  'signé',
  'données',
  '東京',
  'inbox',
  'κλειδί',
  'ключ',
  'message',
  'world',
  'café',
  '🙂',
  'with "quotes"',
  'tab\there',
  'path/to',
]

function sentence(rand, n) {
  const out = []
  for (let i = 0; i < n; i++) out.push(WORDS[Math.floor(rand() * WORDS.length)])
  return out.join(' ')
}

function record(rand, i) {
  return {
    id: `item-${i}`,
    title: sentence(rand, 4),
    score: Math.round(rand() * 1e6) / 100,
    count: Math.floor(rand() * 1000),
    ratio: rand(),
    active: rand() < 0.5,
    tags: [sentence(rand, 1), sentence(rand, 1), sentence(rand, 1)],
    owner: { agent: `https://agent${i % 7}.example/agents/bob`, since: '2026-11-21T22:48:01.123Z' },
    note: rand() < 0.3 ? null : sentence(rand, 8),
  }
}

/**
 * A signed-message-shaped object whose JSON is roughly `targetBytes` long: the PROFILE §2 header
 * fields, a signature, a trace, and `data` parts filling the body.
 */
export function makeMessage(targetBytes, seed = 1) {
  const rand = rng(seed)
  const msg = {
    version: '1',
    message_id: '01JD3V8Q6X5K2M9N4P7R0S1T2U',
    date: '2026-11-21T22:48:01.123Z',
    from: {
      agent: 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK',
      relays: ['https://relay.example'],
    },
    to: { agent: 'https://bob.example/agents/bob' },
    conversation_id: 'c-7f3a',
    sequence: 42,
    phase: 'request',
    content_type: 'application/json',
    ttl_seconds: 86400,
    auth_level: 3,
    body: { parts: [{ type: 'text', text: sentence(rand, 12) }] },
    security: {
      signatures: [
        {
          alg: 'ed25519',
          key_id:
            'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK#z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK',
          created: '2026-11-21T22:48:01.123Z',
          signed_headers: [
            'version',
            'message_id',
            'date',
            'from',
            'to',
            'conversation_id',
            'sequence',
            'phase',
            'content_type',
          ],
          signed_body: true,
          sig: 'x'.repeat(86),
        },
      ],
    },
    trace: {
      received: [
        {
          by: 'https://relay.example',
          with: 'https',
          at: '2026-11-21T22:48:02Z',
          from: '203.0.113.7',
        },
      ],
    },
  }
  const items = []
  msg.body.parts.push({ type: 'data', data: { items } })
  let i = 0
  while (JSON.stringify(msg).length < targetBytes) items.push(record(rand, i++))
  // Overshooting by one record is fine at 100 KB; at 1 KB drop it when it overshoots a lot.
  if (items.length > 1 && JSON.stringify(msg).length > targetBytes * 1.25) items.pop()
  return msg
}

/** Calls of `fn` that take about `ms`, found by doubling. */
function calibrate(fn, ms) {
  let batch = 1
  for (;;) {
    const start = performance.now()
    for (let i = 0; i < batch; i++) fn()
    if (performance.now() - start >= ms) return batch
    batch *= 2
  }
}

let sink = 0

/** Time `batch` calls of `fn`, in milliseconds. */
function time(fn, batch) {
  const start = performance.now()
  for (let i = 0; i < batch; i++) sink += fn().length
  return performance.now() - start
}

/**
 * Operations per second of `fn` and of `baseline`, measured in alternating slices of ~50 ms for
 * at least `ms` each, so a noisy machine (CI, shared cores) slows both alike and the ratio holds.
 */
function measurePair(fn, baseline, ms) {
  const a = calibrate(fn, 50)
  const b = calibrate(baseline, 50)
  let ta = 0
  let tb = 0
  let na = 0
  let nb = 0
  while (ta < ms || tb < ms) {
    ta += time(fn, a)
    na += a
    tb += time(baseline, b)
    nb += b
  }
  return [(na * 1000) / ta, (nb * 1000) / tb]
}

/**
 * Measure `canonicalize` (string) and UTF-8 canonical bytes against `JSON.stringify` (and
 * `TextEncoder` of it) on a ~1 KB and a ~100 KB message-like object.
 *
 * @param {{ canonicalize: (v: unknown) => string, canonicalizeToBytes?: (v: unknown) => Uint8Array }} impl
 * @returns {Promise<{ name: string, opsPerSec: number, mbPerSec: number, baselineMbPerSec: number, ratio: number }[]>}
 */
export async function benchCanonicalize({ canonicalize, canonicalizeToBytes }) {
  const rows = []
  const encoder = new TextEncoder()
  for (const [label, size] of [
    ['1 KB', 1024],
    ['100 KB', 100 * 1024],
  ]) {
    const value = makeMessage(size)
    const bytes = encoder.encode(JSON.stringify(value)).length
    const cases = [
      [`canonicalize ${label}`, () => canonicalize(value), () => JSON.stringify(value)],
    ]
    if (canonicalizeToBytes) {
      cases.push([
        `canonicalizeToBytes ${label}`,
        () => canonicalizeToBytes(value),
        () => encoder.encode(JSON.stringify(value)),
      ])
    }
    for (const [name, fn, baseline] of cases) {
      measurePair(fn, baseline, WARMUP_MS)
      const [opsPerSec, baselineOps] = measurePair(fn, baseline, MIN_MS)
      const mb = bytes / 1e6
      rows.push({
        name,
        opsPerSec: Math.round(opsPerSec),
        mbPerSec: +(opsPerSec * mb).toFixed(1),
        baselineMbPerSec: +(baselineOps * mb).toFixed(1),
        ratio: +(opsPerSec / baselineOps).toFixed(3),
      })
    }
  }
  if (sink === -1) console.log(sink) // keeps results observable, so no call is optimised away
  return rows
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  // `--impl <file>` benchmarks any ES module exporting canonicalize (e.g. an esbuild bundle of
  // src/jcs.ts); by default the built package.
  const at = process.argv.indexOf('--impl')
  const spec = at > 0 ? pathToFileURL(process.argv[at + 1]).href : '@agentmsg/core'
  const impl = await import(spec)
  console.table(await benchCanonicalize(impl))
}
