import { Point } from '@noble/ed25519'
import { base58btc } from 'multiformats/bases/base58'
import { describe, expect, it } from 'vitest'
import { base58btcEncode } from '../src/base58.js'
import { base64urlEncode } from '../src/base64url.js'
import { nobleCryptoProvider } from '../src/crypto/noble.js'
import { nodeCryptoProvider } from '../src/crypto/node.js'
import {
  didKeyFragment,
  didKeyFromPublicKey,
  isDidKey,
  publicKeyFromDidKey,
} from '../src/did-key.js'
import { isAgentMsgError } from '../src/errors.js'
import {
  ed25519PublicKeyToX25519,
  ed25519SeedToX25519SecretKey,
  resolveDidKeyDocument,
} from '../src/x25519.js'
import { checkDidKeyVectors } from './shared/didkey-vectors.js'
import { readVectorJson } from './vectors.node.js'

const data = {
  didKeys: readVectorJson('did-key-ed25519-x25519.json'),
  x25519: readVectorJson('ed25519-to-x25519-didkey.json'),
  libsodium: readVectorJson('ed25519-to-x25519-libsodium.json'),
}
const libsodium = data.libsodium as {
  invalidPublicKeys: { ed25519PublicKey: string }[]
}

const hex = (s: string) => Uint8Array.from(Buffer.from(s, 'hex'))
const DID0 = 'did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp'
const PK0 = hex('3b6a27bcceb6a42d62a3a8d02a6f0d73653215771de243a63ac048a18b59da29')

function expectInvalidFormat(fn: () => unknown, label: string) {
  let error: unknown
  try {
    fn()
  } catch (e) {
    error = e
  }
  expect(isAgentMsgError(error) && error.code === 'invalid_format', label).toBe(true)
}

/** `did:key:z` + base58btc(prefix ‖ key), built independently of the code under test. */
const rawDid = (prefix: number[], key: Uint8Array) =>
  'did:key:' + base58btc.encode(new Uint8Array([...prefix, ...key]))

describe('did:key vectors', () => {
  it.each([
    ['node', nodeCryptoProvider],
    ['noble', nobleCryptoProvider],
  ] as const)('agree with W3C CCG and libsodium (keys from %s)', async (_, provider) => {
    const results = await checkDidKeyVectors(
      {
        ed25519PublicKey: (seed) => provider.ed25519PublicKey(seed),
        didKeyFromPublicKey,
        publicKeyFromDidKey,
        isDidKey,
        didKeyFragment,
        resolveDidKeyDocument,
        ed25519PublicKeyToX25519,
        ed25519SeedToX25519SecretKey,
        base58btcEncode,
        base64urlEncode,
      },
      data,
    )
    expect(Object.fromEntries(results.map((r) => [r.file, r.total]))).toEqual({
      'did-key-ed25519-x25519.json': 5,
      'ed25519-to-x25519-didkey.json': 5,
      'ed25519-to-x25519-libsodium.json': 4,
    })
    for (const r of results) expect(r.failures, r.file).toEqual([])
  })

  it('resolves exactly the published document, member order included', () => {
    const vectors = data.didKeys as Record<string, { didDocument: unknown }>
    expect(JSON.stringify(resolveDidKeyDocument(DID0))).toBe(
      JSON.stringify(vectors[DID0]!.didDocument),
    )
  })
})

describe('did:key parsing', () => {
  it('round-trips and gives the fragment used in key_id', () => {
    expect(didKeyFromPublicKey(PK0)).toBe(DID0)
    expect(publicKeyFromDidKey(DID0)).toEqual(PK0)
    expect(didKeyFragment(DID0)).toBe(DID0.slice('did:key:'.length))
    expect(isDidKey(DID0)).toBe(true)
  })

  const x25519Did = Object.keys(
    (readVectorJson('did-key-x25519.json') as { didDocument: Record<string, unknown> }).didDocument,
  )[0]!

  it.each([
    ['empty', ''],
    ['method only', 'did:key:'],
    ['multibase prefix only', 'did:key:z'],
    ['other method', 'did:web:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp'],
    ['upper-case scheme', DID0.replace('did:key:', 'DID:KEY:')],
    ['no did: prefix', DID0.slice(4)],
    ['not z multibase (base58flickr Z)', DID0.replace(':z', ':Z')],
    ['not z multibase (u base64url)', 'did:key:u7QE7aie8zrakLWKjqNAqbw1zZTIVdx3iQ6Y6wEihi1naKQ'],
    ['missing multibase prefix', DID0.replace(':z', ':')],
    ['bad base58 character 0', DID0.slice(0, -1) + '0'],
    ['bad base58 character l', DID0.slice(0, -1) + 'l'],
    ['trailing whitespace', DID0 + ' '],
    ['leading whitespace', ' ' + DID0],
    ['DID URL with fragment', `${DID0}#${DID0.slice(8)}`],
    ['DID URL with query', `${DID0}?versionId=1`],
    ['DID URL with path', `${DID0}/path`],
    ['X25519 did:key (0xec01)', x25519Did],
    ['secp256k1 multicodec (0xe701)', rawDid([0xe7, 0x01], new Uint8Array(33).fill(2))],
    ['unknown multicodec (0xed00)', rawDid([0xed, 0x00], PK0)],
    ['one-byte varint 0xed', rawDid([0xed], PK0)],
    ['31-byte key', rawDid([0xed, 0x01], PK0.subarray(0, 31))],
    ['33-byte key', rawDid([0xed, 0x01], new Uint8Array([...PK0, 0]))],
    ['empty key', rawDid([0xed, 0x01], new Uint8Array())],
    ['over-long', 'did:key:z' + '1'.repeat(10_000)],
  ])('refuses %s', (label, did) => {
    expectInvalidFormat(() => publicKeyFromDidKey(did), label)
    expectInvalidFormat(() => didKeyFragment(did), label)
    expectInvalidFormat(() => resolveDidKeyDocument(did), label)
    expect(isDidKey(did), label).toBe(false)
  })

  it('isDidKey is false for non-strings', () => {
    for (const v of [undefined, null, 42, {}, [DID0]]) expect(isDidKey(v)).toBe(false)
  })

  it('didKeyFromPublicKey refuses a key that is not 32 bytes', () => {
    expectInvalidFormat(() => didKeyFromPublicKey(new Uint8Array(31)), '31 bytes')
    expectInvalidFormat(() => didKeyFromPublicKey(new Uint8Array(33)), '33 bytes')
  })

  it('resolves the JsonWebKey2020 form', () => {
    const doc = resolveDidKeyDocument(DID0, { publicKeyFormat: 'JsonWebKey2020' })
    expect(doc['@context']).toEqual([
      'https://www.w3.org/ns/did/v1',
      'https://w3id.org/security/suites/jws-2020/v1',
    ])
    expect(doc.verificationMethod[0]!.publicKeyJwk).toEqual({
      kty: 'OKP',
      crv: 'Ed25519',
      x: base64urlEncode(PK0),
    })
  })
})

describe('Ed25519 → X25519', () => {
  it.each(libsodium.invalidPublicKeys.map((k) => k.ed25519PublicKey))(
    'refuses the key libsodium refuses: %s',
    (pk) => {
      expectInvalidFormat(() => ed25519PublicKeyToX25519(hex(pk)), pk)
      // A did:key holding it parses (structural check) but has no DID document.
      expectInvalidFormat(() => resolveDidKeyDocument(rawDid([0xed, 0x01], hex(pk))), pk)
    },
  )

  it('refuses a mixed-order key (valid key + 8-torsion), which only the subgroup check catches', () => {
    // An order-8 point (from the standard small-order encodings list).
    const torsion = Point.fromHex(
      'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a',
    )
    expect(torsion.isSmallOrder()).toBe(true)
    const mixed = Point.fromBytes(PK0).add(torsion)
    expect(mixed.isSmallOrder()).toBe(false)
    expectInvalidFormat(() => ed25519PublicKeyToX25519(mixed.toBytes()), 'mixed order')
  })

  it('refuses a non-canonical encoding (y ≥ p) and a wrong length', () => {
    // y = p + 1 encodes the identity non-canonically; y = 2^255 − 1 is ≥ p.
    const pPlusOne = hex('eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f')
    expectInvalidFormat(() => ed25519PublicKeyToX25519(pPlusOne), 'p + 1')
    expectInvalidFormat(() => ed25519PublicKeyToX25519(new Uint8Array(32).fill(0xff)), 'all ones')
    expectInvalidFormat(() => ed25519PublicKeyToX25519(PK0.subarray(0, 31)), '31 bytes')
  })

  it('matches X25519 of the derived secret key for random seeds (the pair is consistent)', async () => {
    const { createPrivateKey, createPublicKey } = await import('node:crypto')
    for (let i = 0; i < 20; i++) {
      const seed = crypto.getRandomValues(new Uint8Array(32))
      const pk = await nodeCryptoProvider.ed25519PublicKey(seed)
      const sk = ed25519SeedToX25519SecretKey(seed)
      // X25519 PKCS#8 (RFC 8410) header, then the 32-byte scalar.
      const der = Buffer.concat([Buffer.from('302e020100300506032b656e04220420', 'hex'), sk])
      const xpk = createPublicKey(createPrivateKey({ key: der, format: 'der', type: 'pkcs8' }))
        .export({ format: 'der', type: 'spki' })
        .subarray(-32)
      expect(Buffer.from(ed25519PublicKeyToX25519(pk)).toString('hex')).toBe(xpk.toString('hex'))
    }
  })
})
