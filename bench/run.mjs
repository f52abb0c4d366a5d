// `npm run bench`: every figure beside a baseline measured in the same run, as a ratio.
// Run after `npm run build` (the npm script does it): benchmarks import the built packages.
import { existsSync, readFileSync } from 'node:fs'
import os from 'node:os'
import * as core from '@agentmsg/core'
import { benchCanonicalize } from './canonicalize.mjs'
import { printTable } from './lib.mjs'
import { benchSignVerify } from './sign-verify.mjs'

const only = process.argv.slice(2)
const want = (name) => only.length === 0 || only.includes(name)

console.log(
  `# agentmsg benchmarks — node ${process.version}, ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, load ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
)
console.log(`crypto provider: ${core.getDefaultCryptoProvider().name}`)

if (want('core')) {
  const sv = await benchSignVerify()
  printTable(
    `sign/verify (${sv.bytes} B message) vs raw node:crypto Ed25519 with a reused KeyObject`,
    sv.rows,
  )

  const canon = await benchCanonicalize(core)
  printTable(
    'canonicalize (RFC 8785) vs JSON.stringify of the same value',
    canon.map((r) => ({
      name: r.name,
      value: r.mbPerSec,
      unit: 'MB/s',
      baseline: r.baselineMbPerSec,
      baselineName: 'JSON.stringify',
      ratio: r.ratio,
      target: '≥ 0.4×',
    })),
  )
}

if (want('sealed-box')) {
  const { benchSealedBox } = await import('./sealed-box.mjs')
  printTable(
    'sealed box (PROFILE §8) seal / open vs libsodium-wrappers (WebAssembly), same keys',
    await benchSealedBox(),
  )
}

if (want('inbox') && existsSync(new URL('./inbox.mjs', import.meta.url))) {
  const { benchInbox } = await import('./inbox.mjs')
  printTable('inbox over HTTPS, full pipeline', await benchInbox())
}

if (want('relay')) {
  const { benchRelayStore } = await import('./relay-store.mjs')
  const storeRows = await benchRelayStore()
  printTable(
    'relay store (SQLite, durable) vs raw better-sqlite3 with the same batching',
    storeRows,
  )
  const { benchRelay } = await import('./relay.mjs')
  printTable('relay over HTTPS (dev certificate, loopback)', await benchRelay({ storeRows }))
}

const sizes = new URL('../.tmp/bundle-sizes.json', import.meta.url)
if (existsSync(sizes)) {
  const rows = JSON.parse(readFileSync(sizes, 'utf8'))
  console.log('\n## browser bundle sizes (from the build: esbuild, minified, gzip -9)')
  console.log(JSON.stringify(rows, null, 2))
}
