import { createPrivateKey, createPublicKey, sign as nodeSign, verify as nodeVerify } from 'node:crypto'
import {
  buildSigningInput,
  createKeyResolver,
  createMessage,
  didKeyFromPublicKey,
  ed25519Signer,
  generateKeyPair,
  signMessage,
  verifyMessage,
} from '@agentmsg/core'
import { opsPerSec, opsPerSecConcurrent, opsPerSecSync } from './lib.mjs'

/** A ~1 KB message (canonical size printed by the bench). */
export async function oneKbMessage() {
  const keys = await generateKeyPair()
  const from = didKeyFromPublicKey(keys.publicKey)
  const to = didKeyFromPublicKey((await generateKeyPair()).publicKey)
  const msg = createMessage({
    from,
    to,
    conversationId: 'c-bench',
    sequence: 7,
    phase: 'request',
    ttlSeconds: 86_400,
    parts: [
      { type: 'text', text: 'Could you check the calendar for next week and propose two slots? ' .repeat(6) },
      { type: 'data', data: { slots: [{ start: '2026-11-23T09:00:00Z', minutes: 30 }], tz: 'Europe/Paris', n: 1.25 } },
    ],
  })
  return { keys, msg, signer: ed25519Signer(keys) }
}

export async function benchSignVerify() {
  const { keys, msg, signer } = await oneKbMessage()
  const signed = await signMessage(msg, signer)
  const bytes = Buffer.byteLength(JSON.stringify(signed))
  const sig = signed.security.signatures[0]
  const { sig: _s, ...params } = sig
  const input = buildSigningInput(signed, sig.signed_headers, true, params)
  const sigBytes = Buffer.from(sig.sig, 'base64url')

  // Baseline: raw node:crypto with KeyObjects built once and reused.
  const pkcs8 = Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), keys.secretKey])
  const priv = createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' })
  const pub = createPublicKey(priv)
  const rawSign = opsPerSecSync(() => nodeSign(null, input, priv))
  const rawVerify = opsPerSecSync(() => nodeVerify(null, input, pub, sigBytes))

  const resolver = createKeyResolver()
  const now = Date.now()
  const ourSign = await opsPerSec(() => signMessage(msg, signer))
  const ourVerify = await opsPerSec(() => verifyMessage(signed, resolver, { now }))
  const ourSignConc = await opsPerSecConcurrent(() => signMessage(msg, signer))
  const ourVerifyConc = await opsPerSecConcurrent(() => verifyMessage(signed, resolver, { now }))
  return {
    bytes,
    rows: [
      { name: `signMessage, ${bytes} B message, one at a time`, value: ourSign, unit: 'ops/s', baseline: rawSign, baselineName: 'raw node:crypto sign', ratio: ourSign / rawSign, target: '≥ 0.8×' },
      { name: `signMessage, 64 in flight`, value: ourSignConc, unit: 'ops/s', baseline: rawSign, baselineName: 'raw node:crypto sign', ratio: ourSignConc / rawSign, target: '≥ 0.8×' },
      { name: `verifyMessage, ${bytes} B message, one at a time`, value: ourVerify, unit: 'ops/s', baseline: rawVerify, baselineName: 'raw node:crypto verify', ratio: ourVerify / rawVerify, target: '≥ 0.8×' },
      { name: `verifyMessage, 64 in flight`, value: ourVerifyConc, unit: 'ops/s', baseline: rawVerify, baselineName: 'raw node:crypto verify', ratio: ourVerifyConc / rawVerify, target: '≥ 0.8×' },
    ],
  }
}
