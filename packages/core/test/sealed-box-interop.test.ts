/**
 * PROFILE §8: our sealed boxes and Ed25519 → X25519 conversions against libsodium itself
 * (`libsodium-wrappers`), both ways, for random keys and sizes, plus the published vectors.
 */
import { ed25519 } from '@noble/curves/ed25519.js'
import sodium from 'libsodium-wrappers'
import { beforeAll, describe, expect, it } from 'vitest'
import {
  cryptoBoxSeal,
  cryptoBoxSealOpen,
  SEALED_BOX_OVERHEAD,
} from '../src/sealed-box/primitives.js'
import { ed25519PublicKeyToX25519, ed25519SeedToX25519SecretKey } from '../src/x25519.js'
import { checkSealedBoxVectors } from './shared/sealed-box-vectors.js'
import { readVectorJson } from './vectors.node.js'

const MiB = 1024 * 1024
const SIZES = [0, 1, 1024, MiB - SEALED_BOX_OVERHEAD]
// Fewer keys at 1 MiB: each size still crosses many random key pairs both ways.
const keysFor = (size: number): number => (size > 64 * 1024 ? 3 : 16)

function randomBytes(n: number): Uint8Array {
  const out = new Uint8Array(n)
  for (let i = 0; i < n; i += 65536) crypto.getRandomValues(out.subarray(i, i + 65536))
  return out
}

/** Byte equality without vitest's element-by-element diffing, which is slow at 1 MiB. */
function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.compare(a, b) === 0
}

async function expectRefused(fn: () => unknown, message: RegExp): Promise<void> {
  await expect((async () => fn())()).rejects.toThrow(
    expect.objectContaining({ code: 'invalid_format', message: expect.stringMatching(message) }),
  )
}

beforeAll(async () => {
  await sodium.ready
})

describe('sealed box interop with libsodium (PROFILE §8)', () => {
  for (const size of SIZES) {
    it(`ours opens with crypto_box_seal_open and theirs with ours (${size} B × ${keysFor(size)} keys)`, async () => {
      for (let k = 0; k < keysFor(size); k++) {
        const { publicKey, privateKey } = sodium.crypto_box_keypair()
        const plaintext = randomBytes(size)
        const ours = await cryptoBoxSeal(plaintext, publicKey)
        expect(ours.length).toBe(size + SEALED_BOX_OVERHEAD)
        expect(sameBytes(sodium.crypto_box_seal_open(ours, publicKey, privateKey), plaintext)).toBe(
          true,
        )
        const theirs = sodium.crypto_box_seal(plaintext, publicKey)
        expect(sameBytes(await cryptoBoxSealOpen(theirs, publicKey, privateKey), plaintext)).toBe(
          true,
        )
      }
    })
  }

  it('uses nonce = BLAKE2b-192(epk ‖ pk): libsodium opens the box part with crypto_box_open_easy', async () => {
    const { publicKey, privateKey } = sodium.crypto_box_keypair()
    const sealed = await cryptoBoxSeal(new Uint8Array([1, 2, 3]), publicKey)
    const epk = sealed.subarray(0, 32)
    const nonce = sodium.crypto_generichash(24, new Uint8Array([...epk, ...publicKey]), null)
    expect(sodium.crypto_box_open_easy(sealed.subarray(32), nonce, epk, privateKey)).toEqual(
      new Uint8Array([1, 2, 3]),
    )
  })

  it('conversions equal crypto_sign_ed25519_pk_to_curve25519 / _sk_to_curve25519 (200 random keys)', () => {
    for (let i = 0; i < 200; i++) {
      const seed = randomBytes(32)
      const kp = sodium.crypto_sign_seed_keypair(seed)
      expect(ed25519PublicKeyToX25519(kp.publicKey)).toEqual(
        sodium.crypto_sign_ed25519_pk_to_curve25519(kp.publicKey),
      )
      expect(ed25519SeedToX25519SecretKey(seed)).toEqual(
        sodium.crypto_sign_ed25519_sk_to_curve25519(kp.privateKey),
      )
    }
  })

  it('a box sealed to a converted Ed25519 key opens with the converted seed, in libsodium too', async () => {
    const seed = randomBytes(32)
    const pk = ed25519PublicKeyToX25519(ed25519.getPublicKey(seed))
    const sk = ed25519SeedToX25519SecretKey(seed)
    const sealed = await cryptoBoxSeal(new Uint8Array([42]), pk)
    expect(sodium.crypto_box_seal_open(sealed, pk, sk)).toEqual(new Uint8Array([42]))
  })

  it('refuses every Ed25519 key libsodium refuses: small order, mixed order, non-points', async () => {
    const candidates: Uint8Array[] = []
    // All 8 small-order points, and each added to a random prime-order point (mixed order).
    const torsion = ed25519.Point.fromHex(
      'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a',
    )
    const base = ed25519.Point.fromBytes(ed25519.getPublicKey(randomBytes(32)))
    for (let j = 0; j < 8; j++) {
      const t = torsion.multiplyUnsafe(BigInt(j))
      candidates.push(t.toBytes(), base.add(t).toBytes())
    }
    for (let i = 0; i < 64; i++) candidates.push(randomBytes(32))
    let refused = 0
    for (const key of candidates) {
      let theirs: Uint8Array | undefined
      try {
        theirs = sodium.crypto_sign_ed25519_pk_to_curve25519(key)
      } catch {
        theirs = undefined
      }
      if (theirs === undefined) {
        refused++
        await expectRefused(() => ed25519PublicKeyToX25519(key), /Ed25519 public key/)
      } else {
        expect(ed25519PublicKeyToX25519(key)).toEqual(theirs)
      }
    }
    expect(refused).toBeGreaterThanOrEqual(15)
  })
})

describe('sealed box refusals (PROFILE §8)', () => {
  const keys = () => sodium.crypto_box_keypair()

  it('refuses tampered, truncated, extended and wrong-key ciphertexts with invalid_format', async () => {
    const kp = keys()
    const sealed = await cryptoBoxSeal(randomBytes(100), kp.publicKey)
    for (let i = 0; i < sealed.length; i += 7) {
      const t = sealed.slice()
      t[i]! ^= 0x80
      await expectRefused(() => cryptoBoxSealOpen(t, kp.publicKey, kp.privateKey), /sealed box/)
    }
    await expectRefused(
      () => cryptoBoxSealOpen(sealed.subarray(0, -1), kp.publicKey, kp.privateKey),
      /does not open/,
    )
    await expectRefused(
      () => cryptoBoxSealOpen(sealed.subarray(0, 47), kp.publicKey, kp.privateKey),
      /shorter than 48/,
    )
    await expectRefused(
      () => cryptoBoxSealOpen(new Uint8Array(), kp.publicKey, kp.privateKey),
      /shorter/,
    )
    const longer = new Uint8Array([...sealed, 0])
    await expectRefused(
      () => cryptoBoxSealOpen(longer, kp.publicKey, kp.privateKey),
      /does not open/,
    )
    const other = keys()
    await expectRefused(
      () => cryptoBoxSealOpen(sealed, other.publicKey, other.privateKey),
      /does not open/,
    )
  })

  it('refuses small-order X25519 keys (all-zero shared secret) both to seal and as ephemeral key', async () => {
    const kp = keys()
    const zero = new Uint8Array(32)
    await expectRefused(() => cryptoBoxSeal(new Uint8Array([1]), zero), /small-order/)
    const forged = new Uint8Array(64)
    await expectRefused(() => cryptoBoxSealOpen(forged, kp.publicKey, kp.privateKey), /small-order/)
  })

  it('refuses wrong key and seed lengths', async () => {
    await expectRefused(() => cryptoBoxSeal(new Uint8Array(), new Uint8Array(31)), /32 bytes/)
    await expectRefused(() => ed25519PublicKeyToX25519(new Uint8Array(33)), /32 bytes/)
    await expectRefused(() => ed25519SeedToX25519SecretKey(new Uint8Array(31)), /32 bytes/)
  })
})

describe('published vectors (test/vectors)', () => {
  it('sealed-box-pynacl.json and ed25519-to-x25519-*.json all pass', async () => {
    const results = await checkSealedBoxVectors(
      { cryptoBoxSeal, cryptoBoxSealOpen, ed25519PublicKeyToX25519, ed25519SeedToX25519SecretKey },
      {
        pynacl: readVectorJson('sealed-box-pynacl.json'),
        libsodium: readVectorJson('ed25519-to-x25519-libsodium.json'),
        didkey: readVectorJson('ed25519-to-x25519-didkey.json'),
      },
    )
    expect(results.map((r) => [r.file, r.total, r.failures])).toEqual([
      ['sealed-box-pynacl.json', 3, []],
      ['ed25519-to-x25519-libsodium.json', 4, []],
      ['ed25519-to-x25519-didkey.json', 5, []],
    ])
  })
})
