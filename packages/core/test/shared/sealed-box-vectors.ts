/**
 * Sealed-box and Ed25519 → X25519 known-answer checks (PROFILE §8), runtime-agnostic (no `node:`
 * imports), shared by the Node and browser suites. The functions under test and the parsed
 * vector files (test/vectors) are passed in.
 */
import type { VectorCheckResult } from './ed25519-vectors.js'

/** The `@agentmsg/core/sealed-box` functions under test. */
export interface SealedBoxLib {
  cryptoBoxSeal(plaintext: Uint8Array, pk: Uint8Array): Promise<Uint8Array>
  cryptoBoxSealOpen(ciphertext: Uint8Array, pk: Uint8Array, sk: Uint8Array): Promise<Uint8Array>
  ed25519PublicKeyToX25519(pk: Uint8Array): Uint8Array
  ed25519SeedToX25519SecretKey(seed: Uint8Array): Uint8Array
}

/** Parsed vector files. */
export interface SealedBoxVectorData {
  /** `sealed-box-pynacl.json` */
  pynacl: unknown
  /** `ed25519-to-x25519-libsodium.json` */
  libsodium: unknown
  /** `ed25519-to-x25519-didkey.json` */
  didkey: unknown
}

const hex = (s: string): Uint8Array => {
  const out = new Uint8Array(s.length / 2)
  for (let i = 0; i < out.length; i++) out[i] = Number.parseInt(s.slice(2 * i, 2 * i + 2), 16)
  return out
}
const toHex = (b: Uint8Array): string =>
  Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('')

async function attempt(fn: () => unknown): Promise<unknown> {
  try {
    return await fn()
  } catch (e) {
    return e
  }
}

/** Whether `fn` throws (or rejects with) a coded `invalid_format` error. */
async function refuses(fn: () => unknown): Promise<boolean> {
  const e = (await attempt(fn)) as { code?: unknown } | undefined
  return typeof e === 'object' && e !== null && e.code === 'invalid_format'
}

interface PynaclRecord {
  recipientSecretKey: string
  recipientPublicKey: string
  plaintext: string
  ciphertext: string
}

interface ConvertRecord {
  ed25519Seed: string
  ed25519PublicKey?: string
  x25519PublicKey: string
  x25519SecretKey: string
}

/** Run every check; one result per vector file. */
export async function checkSealedBoxVectors(
  lib: SealedBoxLib,
  data: SealedBoxVectorData,
): Promise<VectorCheckResult[]> {
  const pynacl: VectorCheckResult = { file: 'sealed-box-pynacl.json', total: 0, failures: [] }
  for (const [i, v] of (data.pynacl as PynaclRecord[]).entries()) {
    pynacl.total++
    const sk = hex(v.recipientSecretKey)
    const pk = hex(v.recipientPublicKey)
    const ct = hex(v.ciphertext)
    const opened = await attempt(() => lib.cryptoBoxSealOpen(ct, pk, sk))
    if (!(opened instanceof Uint8Array) || toHex(opened) !== v.plaintext) {
      pynacl.failures.push(`#${i}: open gave ${String(opened)}`)
    }
    const flipped = ct.slice()
    flipped[ct.length - 1]! ^= 1
    if (!(await refuses(() => lib.cryptoBoxSealOpen(flipped, pk, sk)))) {
      pynacl.failures.push(`#${i}: a 1-bit change was not refused`)
    }
    const resealed = await attempt(async () =>
      lib.cryptoBoxSealOpen(await lib.cryptoBoxSeal(hex(v.plaintext), pk), pk, sk),
    )
    if (!(resealed instanceof Uint8Array) || toHex(resealed) !== v.plaintext) {
      pynacl.failures.push(`#${i}: seal then open did not round-trip`)
    }
  }

  const convert = async (
    file: string,
    records: ConvertRecord[],
    pkOf: (r: ConvertRecord) => string | undefined,
  ) => {
    const result: VectorCheckResult = { file, total: 0, failures: [] }
    for (const [i, r] of records.entries()) {
      result.total++
      const sk = await attempt(() => toHex(lib.ed25519SeedToX25519SecretKey(hex(r.ed25519Seed))))
      if (sk !== r.x25519SecretKey) result.failures.push(`#${i}: secret key ${String(sk)}`)
      const edPk = pkOf(r)
      if (edPk !== undefined) {
        const pk = await attempt(() => toHex(lib.ed25519PublicKeyToX25519(hex(edPk))))
        if (pk !== r.x25519PublicKey) result.failures.push(`#${i}: public key ${String(pk)}`)
      }
    }
    return result
  }

  const ls = data.libsodium as {
    valid: ConvertRecord[]
    invalidPublicKeys: { ed25519PublicKey: string }[]
  }
  // The README gives the Ed25519 public key libsodium computes for the one valid seed.
  const lsPk = 'b5076a8474a832daee4dd5b4040983b6623b5f344aca57d4d6ee4baf3f259e6e'
  const libsodium = await convert('ed25519-to-x25519-libsodium.json', ls.valid, () => lsPk)
  for (const r of ls.invalidPublicKeys) {
    libsodium.total++
    if (!(await refuses(() => lib.ed25519PublicKeyToX25519(hex(r.ed25519PublicKey))))) {
      libsodium.failures.push(`${r.ed25519PublicKey} was not refused`)
    }
  }
  const didkey = await convert(
    'ed25519-to-x25519-didkey.json',
    data.didkey as ConvertRecord[],
    (r) => r.ed25519PublicKey,
  )
  return [pynacl, libsodium, didkey]
}
