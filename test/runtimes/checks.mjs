/**
 * The local checks of the runtime matrix, run inside Deno, Bun and workerd against the built
 * packages as each runtime resolves them: which platform files the package conditions chose,
 * the published vectors (RFC 8032 and Wycheproof Ed25519 on every provider the runtime can
 * use, RFC 8785, did:key) and a sign/verify round trip. Web APIs only; the vector files are read
 * in place from test/vectors by the runtime's `loadVector`.
 */
import * as core from '@agentmsg/core'
import { loadNobleCryptoProvider } from '@agentmsg/core'
import * as encoding from '@agentmsg/core/http'
import * as identityLib from '@agentmsg/core/identity'
import * as receiveLib from '@agentmsg/core/receive'
import * as x25519 from '@agentmsg/core/sealed-box'
// packages/core/test/shared, bundled to plain JavaScript by the orchestrator (vector-checks.mjs
// in .tmp/runtimes): the same checks vitest runs on Node and Playwright in Chromium.
import {
  checkDidKeyVectors,
  checkEd25519Vectors,
  checkJcsVectors,
} from '../../.tmp/runtimes/vector-checks.mjs'
import { conditions } from './conditions/probe.mjs'

// Published case counts (test/vectors/README.md): a check that skipped cases must fail.
const PUBLISHED = {
  'ed25519-rfc8032-7.1.json': 5,
  'wycheproof-ed25519_test.json': 151,
  'jcs-testdata.json': 6,
  'jcs-rfc8785-appendix-b-numbers.json': 26,
  'jcs-es6testfile-first10000.txt': 10_000,
  'did-key-ed25519-x25519.json': 5,
}

/** One check's outcome: `detail` says what was found (why it failed, or what ran). */
const check = (name, ok, detail) => ({ name, ok, detail })

/** Every file passed, with its published number of cases where one is known. */
function verdict(name, results) {
  const bad = results.flatMap((r) => {
    const published = PUBLISHED[r.file]
    const count =
      published !== undefined && r.total !== published
        ? [`${r.file}: ${r.total} of ${published} cases`]
        : []
    return [...count, ...r.failures.slice(0, 3).map((f) => `${r.file}: ${f}`)]
  })
  const counts = results.map((r) => `${r.file.replace(/\.(json|txt)$/, '')} ${r.total}`).join(', ')
  return check(name, bad.length === 0 && results.length > 0, bad.length ? bad.join('; ') : counts)
}

/**
 * Run the local checks; `loadVector(name)` resolves with a vector file's text. Resolves with
 * `{ checks, platform }`, where `platform` names the matched conditions and the Ed25519 provider
 * that ran.
 */
export async function runLocalChecks(loadVector) {
  const json = async (name) => JSON.parse(await loadVector(name))
  const ed25519Data = {
    rfc8032: await json('ed25519-rfc8032-7.1.json'),
    wycheproof: await json('wycheproof-ed25519_test.json'),
  }
  const checks = []

  // The platform file behind `#crypto-default` comes from the conditions alone: `node` →
  // node:crypto; otherwise WebCrypto when its Ed25519 passes core's probe, else noble.
  const webCrypto = await core.webCryptoSupportsEd25519()
  const provider = core.getDefaultCryptoProvider()
  await provider.ed25519PublicKey(new Uint8Array(32)) // a browser default decides on first use
  const expected = conditions.includes('node') ? 'node' : webCrypto ? 'webcrypto' : 'noble'
  const platform = { conditions, provider: provider.name, webCryptoEd25519: webCrypto }
  checks.push(
    check(
      'the conditions choose the Ed25519 provider',
      provider.name === expected,
      `conditions ${conditions.join(', ')}; WebCrypto Ed25519 ${webCrypto ? 'passes the probe' : 'absent'}; ${provider.name} ran (expected ${expected})`,
    ),
  )
  checks.push(
    verdict(
      `Ed25519 RFC 8032 + Wycheproof, default provider (${provider.name})`,
      await checkEd25519Vectors(provider, ed25519Data),
    ),
  )
  checks.push(
    verdict(
      'Ed25519 RFC 8032 + Wycheproof, noble (the fallback)',
      await checkEd25519Vectors(await loadNobleCryptoProvider(), ed25519Data),
    ),
  )
  // Where WebCrypto has Ed25519 it must meet the same vectors; where it has none, the default
  // must not be WebCrypto (the fallback ran instead).
  checks.push(
    webCrypto
      ? verdict(
          'Ed25519 RFC 8032 + Wycheproof, WebCrypto',
          await checkEd25519Vectors(core.createWebCryptoProvider(), ed25519Data),
        )
      : check(
          'no WebCrypto Ed25519: the default falls back',
          provider.name !== 'webcrypto',
          `default provider ${provider.name}`,
        ),
  )

  checks.push(
    verdict(
      'RFC 8785 canonical JSON',
      checkJcsVectors(
        core.canonicalize,
        {
          testdata: await json('jcs-testdata.json'),
          appendixB: await json('jcs-rfc8785-appendix-b-numbers.json'),
          es6Lines: await loadVector('jcs-es6testfile-first10000.txt'),
        },
        // As the Node suite: the strict parser takes objects only; `values` is not I-JSON.
        {
          parse: (text) => receiveLib.parseStrictJson(`{"v":${text}}`).v,
          parseRefuses: ['values'],
        },
      ),
    ),
  )
  checks.push(
    verdict(
      'did:key (W3C CCG) and Ed25519 → X25519',
      await checkDidKeyVectors(
        {
          ed25519PublicKey: (seed) => provider.ed25519PublicKey(seed),
          didKeyFromPublicKey: core.didKeyFromPublicKey,
          publicKeyFromDidKey: core.publicKeyFromDidKey,
          isDidKey: core.isDidKey,
          didKeyFragment: core.didKeyFragment,
          resolveDidKeyDocument: x25519.resolveDidKeyDocument,
          ed25519PublicKeyToX25519: x25519.ed25519PublicKeyToX25519,
          ed25519SeedToX25519SecretKey: x25519.ed25519SeedToX25519SecretKey,
          base58btcEncode: encoding.base58btcEncode,
          base64urlEncode: encoding.base64urlEncode,
        },
        {
          didKeys: await json('did-key-ed25519-x25519.json'),
          x25519: await json('ed25519-to-x25519-didkey.json'),
          libsodium: await json('ed25519-to-x25519-libsodium.json'),
        },
      ),
    ),
  )
  checks.push(await roundTrip())
  return { checks, platform }
}

/** signMessage → verifyMessage with a new did:key (level 3), and one changed byte refused. */
async function roundTrip() {
  const name = 'sign/verify round trip'
  try {
    const keys = await core.generateKeyPair()
    const me = core.didKeyFromPublicKey(keys.publicKey)
    const signed = await core.signMessage(
      core.createMessage({
        from: me,
        to: 'https://bob.example',
        conversationId: 'c-1',
        sequence: 0,
        phase: 'greeting',
        text: 'hi',
      }),
      core.ed25519Signer(keys),
    )
    const { level } = await receiveLib.verifyMessage(signed, identityLib.createKeyResolver())
    const altered = structuredClone(signed)
    altered.body.parts[0].text = 'hi!'
    const refused = await receiveLib.verifyMessage(altered, identityLib.createKeyResolver()).then(
      () => 'verified',
      (e) => e?.code,
    )
    return check(
      name,
      level === 3 && refused === 'invalid_signature',
      `level ${level}; one byte changed: ${refused}`,
    )
  } catch (e) {
    return check(name, false, `threw ${e?.stack ?? e}`)
  }
}
