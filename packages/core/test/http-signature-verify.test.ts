/** Relay agent auth (PROFILE §9): what the verifier refuses — missing auth, tampering, extra signatures. */
import { describe, expect, it } from 'vitest'
import { utf8Encode } from '../src/bytes.js'
import { contentDigest } from '../src/http-signature/sign.js'
import { verifyRequest } from '../src/http-signature/verify.js'
import {
  alice,
  BASE,
  bob,
  postBody as body,
  enc,
  getHeaders,
  getParams,
  kid,
  manualHeaders,
  NONCE,
  postHeaders,
  postInput,
  rejects,
  T,
  verifyInput,
} from './http-signature-fixtures.js'

describe('verifyRequest refusals', () => {
  it('the untampered requests verify (control)', async () => {
    await verifyRequest(verifyInput({ headers: getHeaders }))
    await verifyRequest(postInput())
  })

  it('missing auth → unauthorized', async () => {
    await rejects(verifyRequest(verifyInput({ headers: {} })), 'unauthorized')
    await rejects(verifyRequest(verifyInput({ headers: new Headers() })), 'unauthorized')
    await rejects(
      verifyRequest(verifyInput({ headers: { Signature: getHeaders['Signature']! } })),
      'unauthorized',
    )
    await rejects(
      verifyRequest(
        verifyInput({ headers: { 'Signature-Input': getHeaders['Signature-Input']! } }),
      ),
      'unauthorized',
    )
  })

  it('tampered method, path, query → invalid_signature', async () => {
    await rejects(
      verifyRequest(verifyInput({ method: 'DELETE', headers: getHeaders })),
      'invalid_signature',
    )
    await rejects(
      verifyRequest(verifyInput({ method: 'get', headers: getHeaders })),
      'invalid_signature',
    )
    await rejects(
      verifyRequest(
        verifyInput({
          targetUri: `${BASE}/relay/stream?agent=${enc(alice.id)}&limit=10`,
          headers: getHeaders,
        }),
      ),
      'invalid_signature',
    )
    await rejects(
      verifyRequest(
        verifyInput({
          targetUri: `${BASE}/relay/messages?agent=${enc(alice.id)}&limit=11`,
          headers: getHeaders,
        }),
      ),
      'invalid_signature',
    )
    await rejects(
      verifyRequest(
        verifyInput({
          targetUri: `https://other.example/relay/messages?agent=${enc(alice.id)}&limit=10`,
          headers: getHeaders,
        }),
      ),
      'invalid_signature',
    )
    await rejects(verifyRequest(postInput({ method: 'PUT' })), 'invalid_signature')
    await rejects(
      verifyRequest(postInput({ targetUri: `${BASE}/relay/subscribe?x=2` })),
      'invalid_signature',
    )
  })

  it('tampered body or Content-Digest → invalid_signature', async () => {
    const other = utf8Encode('{"subscribe":{"agent":"y"}}')
    // Body changed, digest kept: the digest no longer matches.
    await rejects(verifyRequest(postInput({ body: other })), 'invalid_signature')
    // Body and digest changed together: the digest matches but is covered by the signature.
    await rejects(
      verifyRequest(
        postInput({
          body: other,
          headers: { ...postHeaders, 'Content-Digest': await contentDigest(other) },
        }),
      ),
      'invalid_signature',
    )
    // Digest changed alone.
    await rejects(
      verifyRequest(
        postInput({ headers: { ...postHeaders, 'Content-Digest': await contentDigest(other) } }),
      ),
      'invalid_signature',
    )
    // Digest missing, malformed, other algorithm, unpadded base64.
    const { 'Content-Digest': digest, ...noDigest } = postHeaders
    await rejects(verifyRequest(postInput({ headers: noDigest })), 'invalid_signature')
    await rejects(
      verifyRequest(postInput({ headers: { ...postHeaders, 'Content-Digest': 'garbage' } })),
      'invalid_signature',
    )
    await rejects(
      verifyRequest(
        postInput({
          headers: { ...postHeaders, 'Content-Digest': digest!.replace('sha-256', 'sha-512') },
        }),
      ),
      'invalid_signature',
    )
    await rejects(
      verifyRequest(
        postInput({ headers: { ...postHeaders, 'Content-Digest': digest!.replace('=:', ':') } }),
      ),
      'invalid_signature',
    )
    // A body on a request signed without one.
    await rejects(verifyRequest(verifyInput({ headers: getHeaders, body })), 'invalid_signature')
  })

  it('tampered created, nonce, keyid, alg → invalid_signature', async () => {
    const si = getHeaders['Signature-Input']!
    const swap = (from: string, to: string) => {
      expect(si).toContain(from)
      return { ...getHeaders, 'Signature-Input': si.replace(from, to) }
    }
    await rejects(
      verifyRequest(verifyInput({ headers: swap(`created=${T}`, `created=${T + 1}`) })),
      'invalid_signature',
    )
    await rejects(
      verifyRequest(verifyInput({ headers: swap(NONCE, 'BBBBBBBBBBBBBBBBBBBBBA') })),
      'invalid_signature',
    )
    await rejects(
      verifyRequest(verifyInput({ headers: swap(kid(), bob.signer.keyId) })),
      'invalid_signature',
    )
    await rejects(
      verifyRequest(verifyInput({ headers: swap('alg="ed25519"', 'alg="rsa-v1_5-sha256"') })),
      'invalid_signature',
    )
    await rejects(
      verifyRequest(verifyInput({ headers: swap('alg="ed25519"', 'alg=ed25519') })),
      'invalid_signature',
    )
    // The signature bytes themselves.
    const sig = getHeaders['Signature']!
    const flipped = sig.slice(0, 6) + (sig[6] === 'A' ? 'B' : 'A') + sig.slice(7)
    await rejects(
      verifyRequest(verifyInput({ headers: { ...getHeaders, Signature: flipped } })),
      'invalid_signature',
    )
  })

  it('two signatures, or another label → invalid_signature', async () => {
    const second = await manualHeaders({
      label: 'sig2',
      params: getParams().replace(NONCE, 'BBBBBBBBBBBBBBBBBBBBBA'),
    })
    // Each signature verifies on its own...
    await rejects(verifyRequest(verifyInput({ headers: second })), 'invalid_signature')
    const both = {
      'Signature-Input': `${getHeaders['Signature-Input']}, ${second['Signature-Input']}`,
      Signature: `${getHeaders['Signature']}, ${second['Signature']}`,
    }
    await rejects(verifyRequest(verifyInput({ headers: both })), 'invalid_signature')
    // Two header lines, combined by Headers.
    const lines = new Headers()
    lines.append('Signature-Input', getHeaders['Signature-Input']!)
    lines.append('Signature-Input', second['Signature-Input']!)
    lines.append('Signature', getHeaders['Signature']!)
    lines.append('Signature', second['Signature']!)
    await rejects(verifyRequest(verifyInput({ headers: lines })), 'invalid_signature')
    // The same label twice.
    const twice = {
      ...getHeaders,
      Signature: `${getHeaders['Signature']}, ${getHeaders['Signature']}`,
    }
    await rejects(verifyRequest(verifyInput({ headers: twice })), 'invalid_signature')
    // Two in Signature-Input, only sig1 in Signature.
    const extraInput = { ...getHeaders, 'Signature-Input': both['Signature-Input'] }
    await rejects(verifyRequest(verifyInput({ headers: extraInput })), 'invalid_signature')
    // Labels that disagree, each signature otherwise valid (the label is not in the base).
    const sig2Value = second['Signature']!.slice('sig2='.length)
    const sig2Params = second['Signature-Input']!.slice('sig2='.length)
    await verifyRequest(
      verifyInput({
        headers: { 'Signature-Input': `sig1=${sig2Params}`, Signature: `sig1=${sig2Value}` },
      }),
    ) // control
    for (const [si, sg] of [
      ['sig2', 'sig1'],
      ['sig1', 'sig2'],
    ]) {
      const headers = { 'Signature-Input': `${si}=${sig2Params}`, Signature: `${sg}=${sig2Value}` }
      await rejects(verifyRequest(verifyInput({ headers })), 'invalid_signature')
    }
    // Only sig1 in Signature-Input, two in Signature.
    const extraSig = {
      ...getHeaders,
      Signature: `${getHeaders['Signature']}, ${second['Signature']}`,
    }
    await rejects(verifyRequest(verifyInput({ headers: extraSig })), 'invalid_signature')
  })
})
