/** Shared fixtures of the relay agent auth tests (PROFILE §9). */

import { fixtureAgent } from '@agentmsg/conformance'
import { expect } from 'vitest'
import { base64Encode } from '../src/base64url.js'
import { utf8Encode } from '../src/bytes.js'
import { AgentMsgError } from '../src/errors.js'
import { NonceMemory } from '../src/http-signature/nonces.js'
import { signatureBase, signRequest } from '../src/http-signature/sign.js'
import type { VerifyRequestInput } from '../src/http-signature/verify.js'
import { createKeyResolver } from '../src/identity-resolver.js'
import type { Signer } from '../src/keys.js'

export const BASE = 'https://relay.example'
export const T = 1_700_000_000 // seconds
export const NOW = T * 1000
export const NONCE = 'AAAAAAAAAAAAAAAAAAAAAA' // 22 chars, 16 zero bytes
export const enc = encodeURIComponent

export const alice = await fixtureAgent()
export const bob = await fixtureAgent()
export const resolver = createKeyResolver()

export async function rejects(p: Promise<unknown>, code: string): Promise<AgentMsgError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  )
  expect(e, `expected ${code}`).toBeInstanceOf(AgentMsgError)
  expect((e as AgentMsgError).code).toBe(code)
  return e as AgentMsgError
}

export function messagesUrl(agent: string): string {
  return `${BASE}/relay/messages?agent=${enc(agent)}&limit=10`
}

export function verifyInput(
  over: Partial<VerifyRequestInput> & Pick<VerifyRequestInput, 'headers'>,
): VerifyRequestInput {
  return {
    method: 'GET',
    targetUri: messagesUrl(alice.id),
    resolver,
    nonces: new NonceMemory(),
    now: NOW,
    ...over,
  }
}

/**
 * Sign whatever Signature-Input value the test wants, so the checks that do not depend on the
 * signature (label, order, components…) are exercised with signatures that do verify.
 * `signedParams` is what goes into the signature base when it differs from the header text.
 */
export async function manualHeaders(opts: {
  signer?: Signer
  method?: string
  targetUri?: string
  label?: string
  params: string
  signedParams?: string
  digest?: string
}): Promise<Record<string, string>> {
  const signer = opts.signer ?? alice.signer
  const base = signatureBase(
    opts.method ?? 'GET',
    opts.targetUri ?? messagesUrl(alice.id),
    opts.digest,
    opts.signedParams ?? opts.params,
  )
  const sig = await signer.sign(base)
  const label = opts.label ?? 'sig1'
  const h: Record<string, string> = {
    'Signature-Input': `${label}=${opts.params}`,
    Signature: `${label}=:${base64Encode(sig)}:`,
  }
  if (opts.digest !== undefined) h['Content-Digest'] = opts.digest
  return h
}

export const kid = () => alice.signer.keyId
export const getParams = (extra = '') =>
  `("@method" "@target-uri");created=${T};nonce="${NONCE}";keyid="${kid()}";alg="ed25519"${extra}`

export const postUrl = `${BASE}/relay/subscribe?x=1`
export const postBody = utf8Encode('{"subscribe":{"agent":"x"}}')

/**
 * Alice's GET of her messages and POST to subscribe, signed by `signRequest` at T (Ed25519 is
 * deterministic, so every file sees the same headers; tests copy them before changing any).
 */
export const { getHeaders, postHeaders } = await profileHeaders()

async function profileHeaders(): Promise<{
  getHeaders: Readonly<Record<string, string>>
  postHeaders: Readonly<Record<string, string>>
}> {
  const getHeaders = await signRequest({
    method: 'GET',
    url: messagesUrl(alice.id),
    signer: alice.signer,
    created: T,
    nonce: NONCE,
  })
  const postHeaders = await signRequest({
    method: 'POST',
    url: postUrl,
    body: postBody,
    signer: alice.signer,
    created: T,
    nonce: NONCE,
  })
  return { getHeaders: Object.freeze(getHeaders), postHeaders: Object.freeze(postHeaders) }
}

/** Verifier input for Alice's signed POST ({@link postHeaders}), with any field replaced. */
export function postInput(over: Partial<VerifyRequestInput> = {}): VerifyRequestInput {
  return verifyInput({
    method: 'POST',
    targetUri: postUrl,
    headers: postHeaders,
    body: postBody,
    ...over,
  })
}
