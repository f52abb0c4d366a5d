/**
 * Smoke entry: the harness itself works (secure context, WebCrypto Ed25519, vectors served)
 * independently of any package, so a failure here points at the machine, not at the SDK.
 */
import { publishResults, vectorJson } from './_page.js'

export interface SmokeResults {
  isSecureContext: boolean
  hasSubtle: boolean
  ed25519RoundTrip: boolean
  rfc8032Records: number
  userAgent: string
}

publishResults(async (): Promise<SmokeResults> => {
  const subtle = globalThis.crypto?.subtle
  let ed25519RoundTrip = false
  if (subtle) {
    const pair = (await subtle.generateKey({ name: 'Ed25519' }, false, [
      'sign',
      'verify',
    ])) as CryptoKeyPair
    const msg = new TextEncoder().encode('agentmsg')
    const sig = await subtle.sign({ name: 'Ed25519' }, pair.privateKey, msg)
    ed25519RoundTrip = await subtle.verify({ name: 'Ed25519' }, pair.publicKey, sig, msg)
  }
  const rfc8032 = await vectorJson<unknown[]>('ed25519-rfc8032-7.1.json')
  return {
    isSecureContext: globalThis.isSecureContext,
    hasSubtle: subtle !== undefined,
    ed25519RoundTrip,
    rfc8032Records: rfc8032.length,
    userAgent: navigator.userAgent,
  }
})
