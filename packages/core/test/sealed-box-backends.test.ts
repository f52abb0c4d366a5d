/**
 * PROFILE §8 on every X25519 a sealed box can run on: node:crypto (Node), WebCrypto X25519
 * (browsers, Deno; Node's `globalThis.crypto.subtle` has it too) and the noble fallback. Each
 * seals boxes the others and libsodium open, opens theirs, and refuses small-order keys.
 */
import { ed25519 } from '@noble/curves/ed25519.js'
import sodium from 'libsodium-wrappers'
import { beforeAll, describe, expect, it } from 'vitest'
import { hexDecode } from '../src/bytes.js'
import { openSealedBody, sealBody } from '../src/sealed-box/body.js'
import { openWith, sealWith } from '../src/sealed-box/primitives.js'
import { nobleX25519 } from '../src/sealed-box/x25519.noble.js'
import { x25519Backend as nodeDefault, nodeX25519 } from '../src/sealed-box/x25519.node.js'
import type { X25519Backend } from '../src/sealed-box/x25519.web.js'
import {
  createWebCryptoX25519,
  webCryptoSupportsX25519,
  x25519Backend as webDefault,
} from '../src/sealed-box/x25519.web.js'
import { ed25519PublicKeyToX25519 } from '../src/x25519.js'

const subtle = globalThis.crypto.subtle
const backends: X25519Backend[] = [nodeX25519, createWebCryptoX25519(subtle), nobleX25519]

// libsodium's list of X25519 points of small order (and their non-canonical encodings):
// 0, 1, the two of order 8, p − 1, p, p + 1.
const SMALL_ORDER = [
  '0000000000000000000000000000000000000000000000000000000000000000',
  '0100000000000000000000000000000000000000000000000000000000000000',
  'e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800',
  '5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157',
  'ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f',
  'edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f',
  'eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f',
].map((h) => hexDecode(h))

const refusal = (message: RegExp) =>
  expect.objectContaining({ code: 'invalid_format', message: expect.stringMatching(message) })

beforeAll(async () => {
  await sodium.ready
})

describe('the platform X25519 (#x25519)', () => {
  it('Node takes node:crypto; elsewhere WebCrypto when it computes RFC 7748, else noble', async () => {
    expect((await nodeDefault()).name).toBe('node')
    expect(await webCryptoSupportsX25519(subtle)).toBe(true)
    expect((await webDefault()).name).toBe('webcrypto')
    expect(await webCryptoSupportsX25519(undefined)).toBe(false)
    // A WebCrypto without X25519, or one computing something else, is not used.
    const without = { importKey: () => Promise.reject(new DOMException('', 'NotSupportedError')) }
    expect(await webCryptoSupportsX25519(without as unknown as SubtleCrypto)).toBe(false)
    const wrong = {
      importKey: subtle.importKey.bind(subtle),
      deriveBits: async () => new ArrayBuffer(32),
    }
    expect(await webCryptoSupportsX25519(wrong as unknown as SubtleCrypto)).toBe(false)
  })

  for (const x of backends) {
    it(`${x.name}: boxes open with every other backend and libsodium, and theirs open with it`, async () => {
      for (let i = 0; i < 4; i++) {
        const { publicKey, privateKey } = sodium.crypto_box_keypair()
        const plaintext = crypto.getRandomValues(new Uint8Array(1000 + i))
        const ours = await sealWith(x, plaintext, publicKey)
        expect(sodium.crypto_box_seal_open(ours, publicKey, privateKey)).toEqual(plaintext)
        for (const y of backends) {
          expect(await openWith(y, ours, publicKey, privateKey)).toEqual(plaintext)
          const theirs = await sealWith(y, plaintext, publicKey)
          expect(await openWith(x, theirs, publicKey, privateKey)).toEqual(plaintext)
        }
        const libsodium = sodium.crypto_box_seal(plaintext, publicKey)
        expect(await openWith(x, libsodium, publicKey, privateKey)).toEqual(plaintext)
      }
    })

    it(`${x.name}: refuses every small-order key, to seal to and as a box's ephemeral key`, async () => {
      const { publicKey, privateKey } = sodium.crypto_box_keypair()
      for (const low of SMALL_ORDER) {
        await expect(sealWith(x, new Uint8Array([1]), low)).rejects.toThrow(refusal(/small-order/))
        // The attack: a box whose ephemeral key has small order, so the shared secret is
        // all-zero and its key known to anyone; built with that key, it must not open.
        const forged = new Uint8Array(64)
        forged.set(low)
        await expect(openWith(x, forged, publicKey, privateKey)).rejects.toThrow(
          refusal(/small-order/),
        )
      }
    })
  }
})

describe('cached conversions (PROFILE §8)', () => {
  it('a mixed-order Ed25519 key stays refused on every call; a cached result cannot be poisoned', async () => {
    const seed = crypto.getRandomValues(new Uint8Array(32))
    const good = ed25519.getPublicKey(seed)
    const torsion = ed25519.Point.fromHex(
      'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a',
    )
    const mixed = ed25519.Point.fromBytes(good).add(torsion).toBytes()
    const recipient = { agent: 'https://bob.example/agent', keyId: 'https://bob.example/agent#k1' }
    const message = {
      from: { agent: 'https://alice.example/agent' },
      to: { agent: recipient.agent },
      message_id: 'm-1',
      conversation_id: 'c-1',
      body: { parts: [{ type: 'text' as const, text: 'hi' }] },
    }
    for (let i = 0; i < 2; i++) {
      expect(() => ed25519PublicKeyToX25519(mixed)).toThrow(refusal(/prime-order subgroup/))
      await expect(sealBody(message, [{ ...recipient, publicKey: mixed }])).rejects.toThrow(
        refusal(/prime-order subgroup/),
      )
    }
    const first = ed25519PublicKeyToX25519(good)
    expect(first).toEqual(sodium.crypto_sign_ed25519_pk_to_curve25519(good))
    first.fill(0)
    expect(ed25519PublicKeyToX25519(good)).toEqual(
      sodium.crypto_sign_ed25519_pk_to_curve25519(good),
    )
    // Sealed with the cached conversion, opened with the cached own keys, twice.
    for (let i = 0; i < 2; i++) {
      const { body } = await sealBody(message, [{ ...recipient, publicKey: good }])
      const opened = await openSealedBody(
        { ...message, body },
        { agent: recipient.agent, ed25519Seed: seed },
      )
      expect(opened).toEqual(message.body)
    }
  })
})
