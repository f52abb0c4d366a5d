/**
 * Browser side of `core-vectors.spec.ts`: the shared, runtime-agnostic vector checks of
 * `packages/core/test/shared` (the same code vitest runs on Node), here against the BUILT
 * `@agentmsg/core` as a browser bundler resolves it (`dist/`, `#crypto-default` → browser file).
 */

import * as core from '@agentmsg/core'
import * as encodingLib from '@agentmsg/core/http'
import { parseStrictJson } from '@agentmsg/core/receive'
import * as sealedBoxLib from '@agentmsg/core/sealed-box'
import { checkDidKeyVectors } from '../../../packages/core/test/shared/didkey-vectors.js'
import {
  checkEd25519Vectors,
  type VectorCheckResult,
} from '../../../packages/core/test/shared/ed25519-vectors.js'
import { checkEncodingVectors } from '../../../packages/core/test/shared/encoding-vectors.js'
import { checkHmacVectors } from '../../../packages/core/test/shared/hmac-vectors.js'
import { checkJcsVectors } from '../../../packages/core/test/shared/jcs-vectors.js'
import { checkSealedBoxVectors } from '../../../packages/core/test/shared/sealed-box-vectors.js'
import { publishResults, vectorJson, vectorText } from './_page.js'

export type { VectorCheckResult }

export interface CoreVectorResults {
  webCryptoSupportsEd25519: boolean
  /** `getDefaultCryptoProvider().name` before and after its first operation. */
  defaultProviderName: { beforeUse: string; afterUse: string }
  /** Ed25519 results per provider: `webcrypto`, `noble` and the browser default. */
  ed25519: Record<string, VectorCheckResult[]>
  hmac: Record<string, VectorCheckResult[]>
  didKey: VectorCheckResult[]
  encoding: VectorCheckResult[]
  jcs: VectorCheckResult[]
  /** `@agentmsg/core/sealed-box` (PROFILE §8): PyNaCl sealed boxes and the conversions. */
  sealedBox: VectorCheckResult[]
}

const MULTIBASE_FILES = [
  'multibase-basic.csv',
  'multibase-leading_zero.csv',
  'multibase-two_leading_zeros.csv',
]

publishResults(async (): Promise<CoreVectorResults> => {
  const [rfc8032, wycheproof, rfc4231, wycheproofHmac, didKeys, x25519, libsodium] =
    await Promise.all(
      [
        'ed25519-rfc8032-7.1.json',
        'wycheproof-ed25519_test.json',
        'hmac-sha256-rfc4231.json',
        'wycheproof-hmac_sha256_test.json',
        'did-key-ed25519-x25519.json',
        'ed25519-to-x25519-didkey.json',
        'ed25519-to-x25519-libsodium.json',
      ].map((name) => vectorJson(name)),
    )
  const [rfc4648, bitcoinBase58, draftBase58] = await Promise.all(
    [
      'base64-rfc4648.json',
      'bitcoin-base58_encode_decode.json',
      'base58-draft-msporny-base58-03.json',
    ].map((name) => vectorJson(name)),
  )
  const [testdata, appendixB, es6Lines] = await Promise.all([
    vectorJson('jcs-testdata.json'),
    vectorJson('jcs-rfc8785-appendix-b-numbers.json'),
    vectorText('jcs-es6testfile-first10000.txt'),
  ])
  const multibase = Object.fromEntries(
    await Promise.all(MULTIBASE_FILES.map(async (f) => [f, await vectorText(f)] as const)),
  )

  const supported = await core.webCryptoSupportsEd25519()
  const defaultProvider = core.getDefaultCryptoProvider()
  const beforeUse = defaultProvider.name
  const providers: Record<string, core.CryptoProvider> = {
    webcrypto: core.createWebCryptoProvider(),
    noble: await core.loadNobleCryptoProvider(),
    default: defaultProvider,
  }

  const ed25519: Record<string, VectorCheckResult[]> = {}
  const hmac: Record<string, VectorCheckResult[]> = {}
  for (const [name, provider] of Object.entries(providers)) {
    ed25519[name] = await checkEd25519Vectors(provider, { rfc8032, wycheproof })
    hmac[name] = await checkHmacVectors(
      provider,
      { rfc4231, wycheproof: wycheproofHmac },
      encodingLib,
    )
  }

  const didKey = await checkDidKeyVectors(
    {
      ed25519PublicKey: (seed) => providers.webcrypto!.ed25519PublicKey(seed),
      didKeyFromPublicKey: core.didKeyFromPublicKey,
      publicKeyFromDidKey: core.publicKeyFromDidKey,
      isDidKey: core.isDidKey,
      didKeyFragment: core.didKeyFragment,
      resolveDidKeyDocument: sealedBoxLib.resolveDidKeyDocument,
      ed25519PublicKeyToX25519: sealedBoxLib.ed25519PublicKeyToX25519,
      ed25519SeedToX25519SecretKey: sealedBoxLib.ed25519SeedToX25519SecretKey,
      base58btcEncode: encodingLib.base58btcEncode,
      base64urlEncode: encodingLib.base64urlEncode,
    },
    { didKeys, x25519, libsodium },
  )

  const encoding = checkEncodingVectors(encodingLib, {
    rfc4648,
    bitcoinBase58,
    draftBase58,
    multibase,
  })

  // Same options as the Node suite (packages/core/test/jcs.test.ts): the strict parser only
  // takes objects at the top, and the testdata's `values` record is not I-JSON.
  const jcs = checkJcsVectors(
    core.canonicalize,
    { testdata, appendixB, es6Lines },
    { parse: (text) => parseStrictJson(`{"v":${text}}`).v, parseRefuses: ['values'] },
  )

  const sealedBox = await checkSealedBoxVectors(sealedBoxLib, {
    pynacl: await vectorJson('sealed-box-pynacl.json'),
    libsodium,
    didkey: x25519,
  })

  return {
    webCryptoSupportsEd25519: supported,
    defaultProviderName: { beforeUse, afterUse: defaultProvider.name },
    ed25519,
    hmac,
    didKey,
    encoding,
    jcs,
    sealedBox,
  }
})
