/**
 * did:key and Ed25519 → X25519 known-answer checks, runtime-agnostic (no `node:` imports),
 * shared by the Node and browser suites. The functions under test and the parsed vector files
 * are passed in.
 */
import type { VectorCheckResult } from './ed25519-vectors.js'

/** The did:key functions under test, as exported by `@agentmsg/core`, plus a key derivation. */
export interface DidKeyLib {
  /** Public key of a seed, usually `provider.ed25519PublicKey`. */
  ed25519PublicKey(seed: Uint8Array): Promise<Uint8Array>
  didKeyFromPublicKey(publicKey: Uint8Array): string
  publicKeyFromDidKey(did: string): Uint8Array
  isDidKey(s: unknown): boolean
  didKeyFragment(did: string): string
  resolveDidKeyDocument(
    did: string,
    options?: { publicKeyFormat?: 'Ed25519VerificationKey2018' | 'JsonWebKey2020' },
  ): unknown
  ed25519PublicKeyToX25519(publicKey: Uint8Array): Uint8Array
  ed25519SeedToX25519SecretKey(seed: Uint8Array): Uint8Array
  base58btcEncode(bytes: Uint8Array): string
  base64urlEncode(bytes: Uint8Array): string
}

/** Parsed vector files; `libsodium` is optional. */
export interface DidKeyVectorData {
  /** `did-key-ed25519-x25519.json` */
  didKeys: unknown
  /** `ed25519-to-x25519-didkey.json` */
  x25519: unknown
  /** `ed25519-to-x25519-libsodium.json` */
  libsodium?: unknown
}

interface KeyPair {
  id: string
  type: string
  publicKeyBase58?: string
  privateKeyBase58?: string
  publicKeyJwk?: { x: string }
  privateKeyJwk?: { x: string; d: string }
}

interface DidKeyEntry {
  seed: string
  verificationKeyPair: KeyPair
  keyAgreementKeyPair: KeyPair
  didDocument: unknown
}

interface X25519Record {
  did: string
  ed25519Seed: string
  ed25519PublicKey: string
  x25519PublicKey: string
  x25519SecretKey: string
  x25519Multibase: string
}

interface LibsodiumVectors {
  valid: { ed25519Seed: string; x25519PublicKey: string; x25519SecretKey: string }[]
  invalidPublicKeys: { ed25519PublicKey: string }[]
}

function fromHex(hex: string): Uint8Array {
  const out = new Uint8Array(hex.length / 2)
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16)
  return out
}

function toHex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')
}

/** JSON with object keys sorted, so two documents compare by content, not member order. */
function stable(value: unknown): string {
  return JSON.stringify(value, (_, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  )
}

/**
 * For each W3C CCG did:key vector: the seed's public key gives the DID, the DID gives the key
 * back, the key's base58/JWK form matches, the X25519 keys match, and the resolved DID document
 * equals the published one (publicKeyBase58 form for entries 1–4, JsonWebKey2020 for entry 5).
 * Then the hex derivations of `ed25519-to-x25519-didkey.json` and, when given, libsodium's own
 * valid and refused keys.
 */
export async function checkDidKeyVectors(
  lib: DidKeyLib,
  data: DidKeyVectorData,
): Promise<VectorCheckResult[]> {
  const doc: VectorCheckResult = { file: 'did-key-ed25519-x25519.json', total: 0, failures: [] }
  for (const [did, v] of Object.entries(data.didKeys as Record<string, DidKeyEntry>)) {
    doc.total++
    const fail = (msg: string) => doc.failures.push(`${did}: ${msg}`)
    try {
      const seed = fromHex(v.seed)
      const pk = await lib.ed25519PublicKey(seed)
      if (lib.didKeyFromPublicKey(pk) !== did) fail(`DID from seed ${lib.didKeyFromPublicKey(pk)}`)
      if (toHex(lib.publicKeyFromDidKey(did)) !== toHex(pk)) fail('public key from DID')
      if (!lib.isDidKey(did)) fail('isDidKey false')
      if (lib.didKeyFragment(did) !== did.slice('did:key:'.length)) fail('fragment')
      const jwk = v.verificationKeyPair.type === 'JsonWebKey2020'
      const vk = v.verificationKeyPair
      const ka = v.keyAgreementKeyPair
      const xpk = lib.ed25519PublicKeyToX25519(pk)
      const xsk = lib.ed25519SeedToX25519SecretKey(seed)
      if (jwk) {
        if (lib.base64urlEncode(pk) !== vk.publicKeyJwk?.x) fail('publicKeyJwk.x')
        if (lib.base64urlEncode(xpk) !== ka.publicKeyJwk?.x) fail('X25519 publicKeyJwk.x')
        if (lib.base64urlEncode(xsk) !== ka.privateKeyJwk?.d) fail('X25519 privateKeyJwk.d')
      } else {
        if (lib.base58btcEncode(pk) !== vk.publicKeyBase58) fail('publicKeyBase58')
        if (lib.base58btcEncode(xpk) !== ka.publicKeyBase58) fail('X25519 publicKeyBase58')
        if (lib.base58btcEncode(xsk) !== ka.privateKeyBase58) fail('X25519 privateKeyBase58')
      }
      const format = jwk ? 'JsonWebKey2020' : 'Ed25519VerificationKey2018'
      const resolved = lib.resolveDidKeyDocument(did, { publicKeyFormat: format })
      if (stable(resolved) !== stable(v.didDocument)) fail(`document ${stable(resolved)}`)
    } catch (e) {
      fail(`threw ${String(e)}`)
    }
  }

  const x: VectorCheckResult = { file: 'ed25519-to-x25519-didkey.json', total: 0, failures: [] }
  for (const r of data.x25519 as X25519Record[]) {
    x.total++
    const fail = (msg: string) => x.failures.push(`${r.did}: ${msg}`)
    try {
      const pk = await lib.ed25519PublicKey(fromHex(r.ed25519Seed))
      if (toHex(pk) !== r.ed25519PublicKey) fail('Ed25519 public key')
      const xpk = toHex(lib.ed25519PublicKeyToX25519(fromHex(r.ed25519PublicKey)))
      if (xpk !== r.x25519PublicKey) fail(`X25519 public key ${xpk}`)
      const xsk = toHex(lib.ed25519SeedToX25519SecretKey(fromHex(r.ed25519Seed)))
      if (xsk !== r.x25519SecretKey) fail(`X25519 secret key ${xsk}`)
      const resolved = lib.resolveDidKeyDocument(r.did) as { keyAgreement: string[] }
      if (resolved.keyAgreement[0] !== `${r.did}#${r.x25519Multibase}`) fail('X25519 multibase')
    } catch (e) {
      fail(`threw ${String(e)}`)
    }
  }

  const results = [doc, x]
  if (data.libsodium !== undefined) {
    const s: VectorCheckResult = {
      file: 'ed25519-to-x25519-libsodium.json',
      total: 0,
      failures: [],
    }
    const v = data.libsodium as LibsodiumVectors
    for (const r of v.valid) {
      s.total++
      try {
        const pk = await lib.ed25519PublicKey(fromHex(r.ed25519Seed))
        const xpk = toHex(lib.ed25519PublicKeyToX25519(pk))
        if (xpk !== r.x25519PublicKey) s.failures.push(`${r.ed25519Seed}: public key ${xpk}`)
        const xsk = toHex(lib.ed25519SeedToX25519SecretKey(fromHex(r.ed25519Seed)))
        if (xsk !== r.x25519SecretKey) s.failures.push(`${r.ed25519Seed}: secret key ${xsk}`)
      } catch (e) {
        s.failures.push(`${r.ed25519Seed}: threw ${String(e)}`)
      }
    }
    for (const r of v.invalidPublicKeys) {
      s.total++
      let refused = false
      try {
        lib.ed25519PublicKeyToX25519(fromHex(r.ed25519PublicKey))
      } catch {
        refused = true
      }
      if (!refused) s.failures.push(`${r.ed25519PublicKey}: converted, libsodium refuses it`)
    }
    results.push(s)
  }
  return results
}
