/**
 * Workloads of the separate-process benchmarks: agents rebuilt from 32-byte seeds in any
 * process, and ~1 KB signed messages written once to a file that the publisher (the bodies)
 * and a baseline server (each message's signing input, signature and public key, so the
 * baseline does exactly one raw `node:crypto` verify and no canonicalisation) both read.
 */
import { randomBytes } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import {
  buildSigningInput,
  didKeyFromPublicKey,
  ed25519Signer,
  keyPairFromSeed,
} from '@agentmsg/core'
import { padLengthFor, signRoundRobin } from '../publish-common.mjs'

export const newSeeds = (n) => Array.from({ length: n }, () => randomBytes(32).toString('hex'))

/** An agent from a hex seed: its did:key id, signer and raw public key. */
export async function agentFromSeed(seedHex) {
  const keys = await keyPairFromSeed(Buffer.from(seedHex, 'hex'))
  return {
    id: didKeyFromPublicKey(keys.publicKey),
    signer: ed25519Signer(keys),
    publicKey: keys.publicKey,
    seed: seedHex,
  }
}

/**
 * `count` signed messages of about `bytes` bytes, round-robin over `senders` (agents), to
 * `to(i)` (an agent id). Each item: `{id, body, input, sig, pub}` (base64 for the binary parts).
 */
export async function signedItems(senders, to, count, bytes = 1024) {
  const padLength = await padLengthFor(senders, to, bytes)
  return signRoundRobin(senders, to, count, padLength, (signed, sender) => {
    const sig = signed.security.signatures[0]
    const { sig: encoded, ...params } = sig
    return {
      id: signed.message_id,
      body: JSON.stringify(signed),
      input: Buffer.from(buildSigningInput(signed, sig.signed_headers, true, params)).toString(
        'base64',
      ),
      sig: encoded,
      pub: Buffer.from(sender.publicKey).toString('base64'),
    }
  })
}

/** One item per line. */
export function writeItems(file, items) {
  writeFileSync(file, items.map((item) => JSON.stringify(item)).join('\n'))
}

export function readItems(file) {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line))
}
