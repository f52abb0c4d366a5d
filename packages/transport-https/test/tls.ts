import { createDevCertificate, type DevCertificate } from '../src/dev-cert.js'

let cached: Promise<DevCertificate> | undefined

/** One self-signed certificate for 127.0.0.1/localhost per test file, made in the test. */
export function testCertificate(): Promise<DevCertificate> {
  cached ??= createDevCertificate()
  return cached
}
