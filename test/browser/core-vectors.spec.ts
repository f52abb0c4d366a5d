/**
 * The shared vector checks of `@agentmsg/core` in real Chromium, against the built package
 * (`dist/`, browser conditions), for the WebCrypto and noble providers and the browser default.
 */
import { expect, type Page, test } from '@playwright/test'
import type { CoreVectorResults, VectorCheckResult } from './entries/core-vectors.js'
import { runEntry } from './harness.js'

// Published case counts (test/vectors/README.md): a check that silently skipped cases would
// otherwise pass.
const PUBLISHED_TOTALS: Record<string, number> = {
  'ed25519-rfc8032-7.1.json': 5,
  'wycheproof-ed25519_test.json': 151,
  'hmac-sha256-rfc4231.json': 7,
  'wycheproof-hmac_sha256_test.json': 174,
  'did-key-ed25519-x25519.json': 5,
  'jcs-testdata.json': 6,
  'jcs-rfc8785-appendix-b-numbers.json': 26,
  'jcs-es6testfile-first10000.txt': 10_000,
  'sealed-box-pynacl.json': 3,
}

function expectAllPass(results: VectorCheckResult[], files: string[]): void {
  expect(results.map((r) => r.file)).toEqual(files)
  for (const r of results) {
    expect(r.failures, r.file).toEqual([])
    const published = PUBLISHED_TOTALS[r.file]
    if (published !== undefined) expect(r.total, r.file).toBe(published)
    else expect(r.total, r.file).toBeGreaterThan(0)
  }
}

test.describe('@agentmsg/core vectors in Chromium (dist, browser build)', () => {
  let page: Page
  let results: CoreVectorResults

  test.beforeAll(async ({ browser }) => {
    page = await browser.newPage()
    results = await runEntry<CoreVectorResults>(page, 'core-vectors')
  })

  test.afterAll(async () => {
    await page?.close()
  })

  test('WebCrypto Ed25519 is available, and the browser default provider picks it', () => {
    expect(results.webCryptoSupportsEd25519).toBe(true)
    expect(results.defaultProviderName.afterUse).toBe('webcrypto')
  })

  for (const provider of ['webcrypto', 'noble', 'default']) {
    test(`Ed25519: RFC 8032 and Wycheproof (${provider} provider)`, () => {
      expectAllPass(results.ed25519[provider] ?? [], [
        'ed25519-rfc8032-7.1.json',
        'wycheproof-ed25519_test.json',
      ])
    })

    test(`HMAC-SHA256: RFC 4231 and Wycheproof (${provider} provider)`, () => {
      expectAllPass(results.hmac[provider] ?? [], [
        'hmac-sha256-rfc4231.json',
        'wycheproof-hmac_sha256_test.json',
      ])
    })
  }

  test('JCS (RFC 8785): testdata, appendix B numbers, 10,000 ES6 numbers', () => {
    expectAllPass(results.jcs, [
      'jcs-testdata.json',
      'jcs-rfc8785-appendix-b-numbers.json',
      'jcs-es6testfile-first10000.txt',
    ])
  })

  test('did:key: W3C CCG documents and Ed25519 → X25519', () => {
    expectAllPass(results.didKey, [
      'did-key-ed25519-x25519.json',
      'ed25519-to-x25519-didkey.json',
      'ed25519-to-x25519-libsodium.json',
    ])
  })

  test('encodings: base64, base64url, base58btc, multibase', () => {
    expectAllPass(results.encoding, [
      'base64-rfc4648.json',
      'bitcoin-base58_encode_decode.json',
      'base58-draft-msporny-base58-03.json',
      'multibase-basic.csv',
      'multibase-leading_zero.csv',
      'multibase-two_leading_zeros.csv',
    ])
  })

  test('sealed box (PROFILE §8): PyNaCl vectors and libsodium Ed25519 → X25519, via the subpath', () => {
    expectAllPass(results.sealedBox, [
      'sealed-box-pynacl.json',
      'ed25519-to-x25519-libsodium.json',
      'ed25519-to-x25519-didkey.json',
    ])
    // 1 valid + 3 refused keys; 5 did:key records.
    expect(results.sealedBox.map((r) => r.total)).toEqual([3, 4, 5])
  })
})
