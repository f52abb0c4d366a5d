/**
 * Shared fixtures of the identity document and agent id tests: fresh Ed25519 keys, the error a
 * call throws, and sample documents.
 */
import { generateKeyPairSync } from 'node:crypto'
import { didKeyFromPublicKey } from '../src/did-key.js'
import { isAgentMsgError } from '../src/errors.js'
import { createIdentityDocument } from '../src/identity/create.js'
import type { IdentityDocument } from '../src/identity/document.js'

/** A fresh Ed25519 public key, made by node:crypto rather than the code under test. */
export function newPublicKey(): Uint8Array {
  const jwk = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' })
  return new Uint8Array(Buffer.from(jwk.x!, 'base64url'))
}

/** The error `fn` throws, asserted to be an AgentMsgError. */
export function errorOf(fn: () => unknown) {
  try {
    fn()
  } catch (e) {
    if (isAgentMsgError(e)) return e
    throw e
  }
  throw new Error('expected a throw')
}

export const AGENT = 'https://a.example/agents/alice'
export const T0 = Date.UTC(2026, 0, 1)
export const pk1 = newPublicKey()
export const pk2 = newPublicKey()
export const didPk = newPublicKey()
export const DID = didKeyFromPublicKey(didPk)
export const ENDPOINTS = {
  inbox: 'https://relay.example/inbox',
  capabilities: 'https://relay.example/capabilities',
}

export function urlDoc(): IdentityDocument {
  return createIdentityDocument({
    agentId: AGENT,
    display: 'Alice',
    publicKey: pk1,
    keyId: 'k1',
    created: T0,
  })
}

export function didDoc(): IdentityDocument {
  return createIdentityDocument({ agentId: DID, publicKey: didPk, endpoints: ENDPOINTS })
}
