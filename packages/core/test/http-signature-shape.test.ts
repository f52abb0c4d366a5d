/** Relay agent auth (PROFILE §9): the exact shape of Signature-Input, Signature and Content-Digest. */
import { describe, expect, it } from 'vitest'
import { contentDigest } from '../src/http-signature/sign.js'
import { verifyRequest } from '../src/http-signature/verify.js'
import {
  alice,
  getHeaders,
  getParams,
  kid,
  manualHeaders,
  NONCE,
  postInput,
  postUrl,
  rejects,
  T,
  verifyInput,
} from './http-signature-fixtures.js'

describe('verifyRequest shape', () => {
  it('parameters in any order verify (PROFILE §9, RFC 9421 §2.3)', async () => {
    // Each is signed over its own text, which is already its canonical serialisation.
    for (const params of [
      `("@method" "@target-uri");nonce="${NONCE}";created=${T};keyid="${kid()}";alg="ed25519"`,
      `("@method" "@target-uri");created=${T};keyid="${kid()}";nonce="${NONCE}";alg="ed25519"`,
      `("@method" "@target-uri");alg="ed25519";created=${T};nonce="${NONCE}";keyid="${kid()}"`,
      `("@method" "@target-uri");keyid="${kid()}";alg="ed25519";created=${T};nonce="${NONCE}"`,
    ]) {
      const r = await verifyRequest(verifyInput({ headers: await manualHeaders({ params }) }))
      expect(r.keyId).toBe(kid())
    }
    // The order received is the order signed: a signature over another order does not verify.
    const reordered = `("@method" "@target-uri");alg="ed25519";created=${T};nonce="${NONCE}";keyid="${kid()}"`
    await rejects(
      verifyRequest(
        verifyInput({
          headers: await manualHeaders({ params: reordered, signedParams: getParams() }),
        }),
      ),
      'invalid_signature',
    )
  })

  it('parameters missing, extra, duplicated or of the wrong type → invalid_signature', async () => {
    const ok = await manualHeaders({ params: getParams() })
    await verifyRequest(verifyInput({ headers: ok })) // control: the manual signer is right
    const variants = [
      `("@method" "@target-uri");created=${T};nonce="${NONCE}";keyid="${kid()}"`,
      `("@method" "@target-uri");created=${T};keyid="${kid()}";alg="ed25519"`,
      getParams(`;expires=${T + 60}`),
      getParams(';tag="x"'),
      `("@method" "@target-uri");created=${T};created=${T};nonce="${NONCE}";keyid="${kid()}";alg="ed25519"`,
      `("@method" "@target-uri");created="${T}";nonce="${NONCE}";keyid="${kid()}";alg="ed25519"`,
      `("@method" "@target-uri");created=${T}.0;nonce="${NONCE}";keyid="${kid()}";alg="ed25519"`,
      `("@method" "@target-uri");created=${T}.5;nonce="${NONCE}";keyid="${kid()}";alg="ed25519"`,
      `("@method" "@target-uri");created=${T};nonce=${NONCE};keyid="${kid()}";alg="ed25519"`,
    ]
    for (const params of variants) {
      await rejects(
        verifyRequest(verifyInput({ headers: await manualHeaders({ params }) })),
        'invalid_signature',
      )
    }
  })

  it('covered components not exactly the profile list → invalid_signature', async () => {
    const tail = `;created=${T};nonce="${NONCE}";keyid="${kid()}";alg="ed25519"`
    for (const list of [
      '("@target-uri" "@method")',
      '("@method")',
      '("@method" "@target-uri" "@authority")',
      '("@method" "@path")',
      '("@method" "@target-uri";sf)',
      '()',
    ]) {
      await rejects(
        verifyRequest(verifyInput({ headers: await manualHeaders({ params: list + tail }) })),
        'invalid_signature',
      )
    }
    // content-digest covered on a request without a body (GET).
    const empty = await contentDigest(new Uint8Array())
    const withDigest = await manualHeaders({
      params: `("@method" "@target-uri" "content-digest")${tail}`,
      digest: empty,
    })
    await rejects(verifyRequest(verifyInput({ headers: withDigest })), 'invalid_signature')
    // content-digest not covered on a request with a body.
    const noDigest = await manualHeaders({
      method: 'POST',
      targetUri: postUrl,
      params: `("@method" "@target-uri")${tail}`,
    })
    await rejects(verifyRequest(postInput({ headers: noDigest })), 'invalid_signature')
  })

  it('malformed structured fields, base64, nonce and keyid → invalid_signature', async () => {
    for (const si of [
      'sig1=',
      'sig1=(',
      'sig1="x"',
      'sig1',
      'SIG1=("@method" "@target-uri")',
      'sig1=("@method" "@target-uri");created=1,',
    ]) {
      await rejects(
        verifyRequest(verifyInput({ headers: { ...getHeaders, 'Signature-Input': si } })),
        'invalid_signature',
      )
    }
    const b64 = getHeaders['Signature']!.slice(6, -1)
    for (const sig of [
      `sig1=:${b64.replace(/=+$/, '')}:`, // unpadded
      `sig1=:${b64.slice(4)}:`, // too short
      `sig1=:${b64}`, // unterminated
      `sig1=:-${b64.slice(1)}:`, // base64url alphabet
      `sig1="${b64}"`, // a string, not bytes
      `sig1=:${b64}:;x=1`, // parameters
    ]) {
      await rejects(
        verifyRequest(verifyInput({ headers: { ...getHeaders, Signature: sig } })),
        'invalid_signature',
      )
    }
    for (const nonce of [
      'AAAAAAAAAAAAAAAAAAAAA',
      'A'.repeat(65),
      'AAAAAAAAAAAAAAAAAAAAA=',
      'AAAAAAAAAAAAAAAAAAAAA+',
      'AAAAAAAAAAAAAAAAAAAAAB',
    ]) {
      const params = getParams().replace(NONCE, nonce)
      await rejects(
        verifyRequest(verifyInput({ headers: await manualHeaders({ params }) })),
        'invalid_signature',
      )
    }
    // A nonce of 64 characters is fine.
    await verifyRequest(
      verifyInput({
        headers: await manualHeaders({ params: getParams().replace(NONCE, 'A'.repeat(64)) }),
      }),
    )
    for (const keyid of [
      'no-hash',
      `${alice.id}#`,
      `#x`,
      `${alice.id}#other`,
      'https://Alice.example#k1',
    ]) {
      const params = getParams().replace(kid(), keyid)
      await rejects(
        verifyRequest(verifyInput({ headers: await manualHeaders({ params }) })),
        'invalid_signature',
      )
    }
  })
})

describe('verifyRequest rebuilds @signature-params by serialising what it parsed', () => {
  const spaced = `(  "@method"   "@target-uri" );created=${T};  nonce="${NONCE}";keyid="${kid()}";alg="ed25519"`

  it("a Signature-Input re-spelled with RFC 8941's optional spaces verifies", async () => {
    // Signed over the canonical serialisation, sent with optional spaces (RFC 8941 §4.1).
    const h = await manualHeaders({ params: spaced, signedParams: getParams() })
    h['Signature-Input'] = `  ${h['Signature-Input']}  `
    const r = await verifyRequest(verifyInput({ headers: h }))
    expect(r.agent).toBe(alice.id)
    // A signature over the spaced text itself is not over the RFC 9421 §2.3 signature base.
    await rejects(
      verifyRequest(verifyInput({ headers: await manualHeaders({ params: spaced }) })),
      'invalid_signature',
    )
  })

  it('anything but optional whitespace spelled differently → invalid_signature', async () => {
    // Each is signed over the canonical serialisation of what it parses to, so only the
    // spelling refuses it: repeats overwrite and 1.0 parses as 1 in the parsed form.
    for (const params of [
      `("@method" "@target-uri");created=${T}.0;nonce="${NONCE}";keyid="${kid()}";alg="ed25519"`,
      `("@method" "@target-uri");created=0${T};nonce="${NONCE}";keyid="${kid()}";alg="ed25519"`,
      `("@method" "@target-uri");created=${T - 1};created=${T};nonce="${NONCE}";keyid="${kid()}";alg="ed25519"`,
      `("@method" "@target-uri");created=${T};nonce="${NONCE}";keyid="${kid()}";alg="ed25519";alg="ed25519"`,
    ]) {
      await rejects(
        verifyRequest(
          verifyInput({ headers: await manualHeaders({ params, signedParams: getParams() }) }),
        ),
        'invalid_signature',
      )
    }
    // The same label twice in Signature-Input, the last one being valid.
    const h = await manualHeaders({ params: getParams() })
    await verifyRequest(verifyInput({ headers: h })) // control
    await rejects(
      verifyRequest(
        verifyInput({
          headers: { ...h, 'Signature-Input': `sig1=("@method"), ${h['Signature-Input']}` },
        }),
      ),
      'invalid_signature',
    )
  })
})
