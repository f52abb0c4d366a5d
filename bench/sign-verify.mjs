import {
  createPrivateKey,
  createPublicKey,
  sign as nodeSign,
  verify as nodeVerify,
} from 'node:crypto'
import { pathToFileURL } from 'node:url'
import {
  buildSigningInput,
  createMessage,
  didKeyFromPublicKey,
  ed25519Signer,
  generateKeyPair,
  signMessage,
} from '@agentmsg/core'
import { createKeyResolver } from '@agentmsg/core/identity'
import { verifyMessage } from '@agentmsg/core/receive'
import { comparePair, printTable } from './lib.mjs'

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

/** How many calls the concurrent rows keep in flight (issue 12's table). */
export const IN_FLIGHT = 32

/**
 * signMessage / verifyMessage of the ~1 KB message against raw node:crypto Ed25519 with a
 * KeyObject built once, alternating slices in the same run (see comparePair): one at a time
 * against the sync forms, {@link IN_FLIGHT} in flight against the callback forms (libuv's thread
 * pool) with as many in flight. Each call verifies the same parsed message and signs the same
 * unsigned one; the SDK keeps no per-message cache, so each call does all of its work.
 */
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
  const rawSignPooled = () =>
    new Promise((resolve, reject) =>
      nodeSign(null, input, priv, (err, s) => (err ? reject(err) : resolve(s))),
    )
  const rawVerifyPooled = () =>
    new Promise((resolve, reject) =>
      nodeVerify(null, input, pub, sigBytes, (err, ok) => (err ? reject(err) : resolve(ok))),
    )
  const ours = {
    sign: () => signMessage(msg, signer),
    verify: () => verifyMessage(signed, resolver, { now }),
  }
  const inFlight = { concurrency: IN_FLIGHT, baselineConcurrency: IN_FLIGHT }
  const verify1 = await comparePair(ours.verify, rawVerify)
  const verifyN = await comparePair(ours.verify, rawVerifyPooled, inFlight)
  const sign1 = await comparePair(ours.sign, rawSign)
  const signN = await comparePair(ours.sign, rawSignPooled, inFlight)
  const row = (name, r, base, target) => ({
    name,
    value: r.ours,
    unit: 'ops/s',
    baseline: r.baseline,
    baselineName: base,
    ratio: r.ours / r.baseline,
    target,
  })
  const pooled = `${IN_FLIGHT} in flight`
  return {
    bytes,
    rows: [
      row(
        `verifyMessage, ${bytes} B message, one at a time`,
        verify1,
        'raw node:crypto sync verify',
        '≥ 0.9×',
      ),
      row(`verifyMessage, ${pooled}`, verifyN, `raw callback verify, ${pooled}`, '≥ 1.0×'),
      row(
        `signMessage, ${bytes} B message, one at a time`,
        sign1,
        'raw node:crypto sync sign',
        '≥ 0.9×',
      ),
      row(`signMessage, ${pooled}`, signN, `raw callback sign, ${pooled}`, '≥ 0.9×'),
    ],
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { bytes, rows } = await benchSignVerify()
  printTable(`sign/verify (${bytes} B message) vs raw node:crypto Ed25519`, rows)
}
