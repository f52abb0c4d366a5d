import { createDevCertificate, type DevCertificate } from '@agentmsg/dev-tls'

let cached: Promise<DevCertificate> | undefined

/** One development certificate (and its CA, `ca`) for 127.0.0.1/localhost per test file. */
export function testCertificate(): Promise<DevCertificate> {
  cached ??= createDevCertificate()
  return cached
}
