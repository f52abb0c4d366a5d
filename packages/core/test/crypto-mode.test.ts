/**
 * Where the Node provider runs Ed25519 (`CryptoMode`: inline, pool, auto) and the fast paths of
 * signMessage / verifyMessage: every mode gives the same answers as the RFC 8032 / Wycheproof
 * vectors and the same signed bytes, and `auto` chooses as crypto/node-mode.ts documents.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, it } from 'vitest'
import { nodeCryptoProvider } from '../src/crypto/node.js'
import { autoModeState, autoRunsInline, ranInline } from '../src/crypto/node-mode.js'
import {
  type CryptoMode,
  type CryptoProvider,
  callEnded,
  callStarted,
  callsInFlight,
} from '../src/crypto/provider.js'
import { createKeyResolver } from '../src/identity-resolver.js'
import { canonicalize, canonicalizeWithout } from '../src/jcs.js'
import type { Signer } from '../src/keys.js'
import { buildSigningInput, signMessage } from '../src/sign.js'
import { formatTimestamp } from '../src/timestamps.js'
import type { Message } from '../src/types.js'
import { verifyMessage } from '../src/verify.js'
import { sampleMessage } from './fixtures.js'
import { checkEd25519Vectors } from './shared/ed25519-vectors.js'
import { alice, bob, clone, failure } from './sign-verify-helpers.js'
import { readVectorJson } from './vectors.node.js'

const ed25519Data = {
  rfc8032: readVectorJson('ed25519-rfc8032-7.1.json'),
  wycheproof: readVectorJson('wycheproof-ed25519_test.json'),
}
const MODES: CryptoMode[] = ['inline', 'pool', 'auto']
const resolver = createKeyResolver()

/** The Node provider with every sign and verify asked to run in `mode`. */
function inMode(mode: CryptoMode): CryptoProvider {
  const p = nodeCryptoProvider
  return {
    ...p,
    ed25519Sign: (seed, message) => p.ed25519Sign(seed, message, mode),
    ed25519Verify: (key, message, sig) => p.ed25519Verify(key, message, sig, mode),
  }
}

describe.each(MODES)('node provider, mode %s', (mode) => {
  it('agrees with every RFC 8032 and Wycheproof Ed25519 vector', async () => {
    const results = await checkEd25519Vectors(inMode(mode), ed25519Data)
    expect(results.map((r) => [r.file, r.total])).toEqual([
      ['ed25519-rfc8032-7.1.json', 5],
      ['wycheproof-ed25519_test.json', 151],
    ])
    for (const r of results) expect(r.failures, r.file).toEqual([])
  })

  it('signs and verifies messages with the same bytes as the other modes', async () => {
    const message = sampleMessage(alice.id, bob.id)
    const created = formatTimestamp(Date.now() - 1000)
    const pooled = await signMessage(message, alice.signer, { created, crypto: 'pool' })
    const here = await signMessage(message, alice.signer, { created, crypto: mode })
    expect(here).toEqual(pooled)
    await expect(verifyMessage(here, resolver, { crypto: mode })).resolves.toMatchObject({
      level: 3,
    })
    const tampered = clone(here) as Message
    tampered.conversation_id = 'c-other'
    expect((await failure(verifyMessage(tampered, resolver, { crypto: mode }))).code).toBe(
      'invalid_signature',
    )
  })

  it('resolves false, never throws, for a signature that is not a point', async () => {
    const key = alice.keys.publicKey
    const notPoint = new Uint8Array(64).fill(0xff)
    await expect(
      nodeCryptoProvider.ed25519Verify(key, new Uint8Array(3), notPoint, mode),
    ).resolves.toBe(false)
  })
})

describe('signing-input fast paths', () => {
  it("the provider's utf8 gives TextEncoder's bytes", () => {
    const utf8 = nodeCryptoProvider.utf8!
    for (const text of ['', 'ascii', 'é ü ß', '日本語', '😀 astral', 'x'.repeat(5000) + 'ü']) {
      expect(new Uint8Array(utf8(text))).toEqual(new TextEncoder().encode(text))
    }
  })

  it('a signer without utf8 (plain TextEncoder) produces the same signature', async () => {
    const message = sampleMessage(alice.id, bob.id)
    const created = formatTimestamp(Date.now() - 1000)
    const seen: Uint8Array[] = []
    const plain: Signer = {
      alg: 'ed25519',
      keyId: alice.signer.keyId,
      sign: (data) => {
        seen.push(data)
        return alice.signer.sign(data)
      },
    }
    const viaPlain = await signMessage(message, plain, { created })
    const viaFast = await signMessage(message, alice.signer, { created })
    expect(viaPlain).toEqual(viaFast)
    // What was signed is exactly the exported PROFILE §3 signing input.
    const { sig: _sig, ...params } = viaPlain.security!.signatures[0]!
    const expected = buildSigningInput(
      viaPlain as unknown as Record<string, unknown>,
      params.signed_headers,
      true,
      params,
    )
    expect(seen).toEqual([expected])
  })

  it('canonicalizeWithout equals canonicalize of the copy without the member', () => {
    const withProto = JSON.parse('{"b":1,"sig":"x","__proto__":{"p":[1,2]},"a":"é"}')
    for (const o of [withProto, { sig: 'only' }, { z: null, y: [true, { c: 1, b: 2 }] }]) {
      const copy = Object.fromEntries(Object.entries(o).filter(([k]) => k !== 'sig'))
      expect(canonicalizeWithout(o, 'sig')).toBe(canonicalize(copy))
    }
    expect(canonicalizeWithout(withProto, 'sig')).toContain('"__proto__":{"p":[1,2]}')
  })

  it('canonicalizeWithout refuses what canonicalize refuses, naming the member', () => {
    expect(() => canonicalizeWithout({ sig: 's', n: Number.NaN }, 'sig')).toThrow(
      expect.objectContaining({ code: 'invalid_format', field: 'n' }),
    )
  })
})

describe("auto mode's choice", () => {
  it('goes to the pool while other signMessage / verifyMessage calls are in flight', () => {
    autoModeState.reset()
    expect(callsInFlight()).toBe(0)
    callStarted()
    expect(autoRunsInline(performance.now())).toBe(true)
    callStarted()
    try {
      expect(autoRunsInline(performance.now())).toBe(false)
    } finally {
      callEnded()
      callEnded()
    }
  })

  it('pools after a window of foreign work, and comes back inline once the loop idles', async () => {
    autoModeState.reset()
    expect(autoRunsInline(performance.now())).toBe(true)
    // 30 ms of synchronous work that is not ours: the event loop is busy with other work.
    const until = performance.now() + 30
    while (performance.now() < until) {
      // busy
    }
    expect(autoRunsInline(performance.now())).toBe(false)
    expect(autoModeState.pooled).toBe(true)
    // The loop then waits idle for a timer: no other work.
    await sleep(30)
    expect(autoRunsInline(performance.now())).toBe(true)
  })

  it('stays inline for a caller that chains operations, whatever the window says', async () => {
    autoModeState.reset()
    autoRunsInline(performance.now())
    const until = performance.now() + 30
    while (performance.now() < until) {
      // busy
    }
    const start = performance.now()
    expect(autoRunsInline(start)).toBe(false)
    ranInline(start, start + 0.02)
    // The next operation starts right after the last one ended.
    expect(autoRunsInline(start + 0.03)).toBe(true)
    autoModeState.reset()
  })

  it('verifyMessage counts calls in flight and leaves the count as it found it', async () => {
    const message = await signMessage(sampleMessage(alice.id, bob.id), alice.signer)
    const seen: number[] = []
    const spy: CryptoProvider = {
      ...nodeCryptoProvider,
      ed25519Verify: (key, data, sig, mode) => {
        seen.push(callsInFlight())
        return nodeCryptoProvider.ed25519Verify(key, data, sig, mode)
      },
    }
    await verifyMessage(message, resolver, { provider: spy })
    await Promise.all([1, 2, 3].map(() => verifyMessage(message, resolver, { provider: spy })))
    expect(seen[0]).toBe(1)
    expect(seen.slice(1)).toEqual([3, 3, 3])
    await failure(verifyMessage({ not: 'a message' }, resolver, { provider: spy }))
    expect(callsInFlight()).toBe(0)
  })
})
