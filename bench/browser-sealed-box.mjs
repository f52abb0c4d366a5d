// Sealed boxes (PROFILE §8) in Chromium: @agentmsg/core/sealed-box as a browser bundler builds
// it (X25519 on WebCrypto, XSalsa20-Poly1305 and BLAKE2b in noble) against libsodium-wrappers
// bundled into the same page, interleaved, same keys. Target: ≥ 0.8× at 1 KB.
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { chromium } from '@playwright/test'
import { build } from 'esbuild'

const ORIGIN = 'https://agentmsg.test'
const CHROMIUM = '/usr/bin/chromium'

// Runs in the page: the same interleaved slices as lib.mjs's comparePair.
const PAGE = `
import { cryptoBoxSeal, cryptoBoxSealOpen } from '@agentmsg/core/sealed-box'
import sodium from 'libsodium-wrappers'

async function rate(fn, ms) {
  let n = 0
  const start = performance.now()
  while (performance.now() - start < ms) {
    await fn()
    n++
  }
  return [n, performance.now() - start]
}

async function pair(ours, theirs, ms) {
  await rate(ours, 200)
  await rate(theirs, 200)
  let a = 0, at = 0, b = 0, bt = 0
  for (let spent = 0; spent < ms; spent += 300) {
    const [n1, t1] = await rate(ours, 150)
    const [n2, t2] = await rate(theirs, 150)
    a += n1; at += t1; b += n2; bt += t2
  }
  return { ours: (a * 1000) / at, baseline: (b * 1000) / bt }
}

window.benchSealed = async (ms) => {
  await sodium.ready
  const { publicKey, privateKey } = sodium.crypto_box_keypair()
  const plaintext = crypto.getRandomValues(new Uint8Array(1024))
  const ours = await cryptoBoxSeal(plaintext, publicKey)
  const theirs = sodium.crypto_box_seal(plaintext, publicKey)
  // Each opens the other's: the page measures the interoperable thing.
  if (sodium.crypto_box_seal_open(ours, publicKey, privateKey).length !== 1024) throw new Error('libsodium cannot open ours')
  if ((await cryptoBoxSealOpen(theirs, publicKey, privateKey)).length !== 1024) throw new Error('we cannot open libsodium’s')
  return {
    seal: await pair(() => cryptoBoxSeal(plaintext, publicKey), () => sodium.crypto_box_seal(plaintext, publicKey), ms),
    open: await pair(() => cryptoBoxSealOpen(ours, publicKey, privateKey), () => sodium.crypto_box_seal_open(theirs, publicKey, privateKey), ms),
  }
}
`

/** Rows for bench/run.mjs, or none (with a note) when Chromium is missing. */
export async function benchBrowserSealedBox({ ms = 3000 } = {}) {
  if (!existsSync(CHROMIUM)) {
    console.log(`(no ${CHROMIUM}: the Chromium sealed-box rows are skipped)`)
    return []
  }
  const bundled = await build({
    stdin: { contents: PAGE, resolveDir: fileURLToPath(new URL('.', import.meta.url)) },
    bundle: true,
    platform: 'browser',
    format: 'esm',
    conditions: ['browser'],
    target: 'es2022',
    minify: true,
    write: false,
    logLevel: 'silent',
  })
  const script = bundled.outputFiles[0].text
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'],
  })
  try {
    const page = await browser.newPage()
    // An https origin is a secure context (WebCrypto); served by page.route, no server.
    await page.route(`${ORIGIN}/**`, (route) => {
      const js = route.request().url().endsWith('.js')
      route.fulfill({
        contentType: js ? 'text/javascript' : 'text/html',
        body: js ? script : '<!doctype html><script type="module" src="/page.js"></script>',
      })
    })
    await page.goto(`${ORIGIN}/`)
    await page.waitForFunction(() => typeof window.benchSealed === 'function')
    const r = await page.evaluate((duration) => window.benchSealed(duration), ms)
    return [
      ['Chromium: seal 1 KB', r.seal],
      ['Chromium: open 1 KB', r.open],
    ].map(([name, m]) => ({
      name,
      value: m.ours,
      unit: 'ops/s',
      baseline: m.baseline,
      baselineName: 'libsodium-wrappers in the page',
      ratio: m.ours / m.baseline,
      target: '≥ 0.8×',
    }))
  } finally {
    await browser.close()
  }
}
