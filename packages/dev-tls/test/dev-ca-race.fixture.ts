/**
 * Child process of dev-ca.test.ts ("two concurrent first uses → one CA"): waits for "go" on
 * stdin (so every child starts together), loads the development CA of the machine directory in
 * argv[2] and prints its certificate's fingerprint.
 */
import { X509Certificate } from 'node:crypto'
import { once } from 'node:events'
import { loadDevCa } from '../src/dev-ca.js'

process.stdout.write('ready\n')
await once(process.stdin, 'data')
const ca = await loadDevCa({ home: process.argv[2] })
process.stdout.write(`${new X509Certificate(ca.cert).fingerprint256}\n`)
process.exit(0)
