import {
  createPrivateKey,
  createPublicKey,
  sign as nodeSign,
  verify as nodeVerify,
} from 'node:crypto'
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
import { comparePair } from './lib.mjs'

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
      {
        type: 'text',
        text: 'Could you check the calendar for next week and propose two slots? '.repeat(6),
      },
      {
        type: 'data',
        data: {
          slots: [{ start: '2026-11-23T09:00:00Z', minutes: 30 }],
          tz: 'Europe/Paris',
          n: 1.25,
        },
      },
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
  const pkcs8 = Buffer.concat([
    Buffer.from('302e020100300506032b657004220420', 'hex'),
    keys.secretKey,
  ])
  const priv = createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' })
  const pub = createPublicKey(priv)
  const resolver = createKeyResolver()
  const now = Date.now()
  const rawSign = () => nodeSign(null, input, priv)
  const rawVerify = () => nodeVerify(null, input, pub, sigBytes)
  const sign1 = await comparePair(() => signMessage(msg, signer), rawSign)
  const signN = await comparePair(() => signMessage(msg, signer), rawSign, { concurrency: 64 })
  const verify1 = await comparePair(() => verifyMessage(signed, resolver, { now }), rawVerify)
  const verifyN = await comparePair(() => verifyMessage(signed, resolver, { now }), rawVerify, {
    concurrency: 64,
  })
  const row = (name, r, base, target = '≥ 0.8×') => ({
    name,
    value: r.ours,
    unit: 'ops/s',
    baseline: r.baseline,
    baselineName: base,
    ratio: r.ours / r.baseline,
    target,
  })
  return {
    bytes,
    rows: [
      row(`signMessage, ${bytes} B message, one at a time`, sign1, 'raw node:crypto sign'),
      row('signMessage, 64 in flight', signN, 'raw node:crypto sign'),
      row(`verifyMessage, ${bytes} B message, one at a time`, verify1, 'raw node:crypto verify'),
      row('verifyMessage, 64 in flight', verifyN, 'raw node:crypto verify'),
    ],
  }
}
