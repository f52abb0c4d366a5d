/**
 * The signer spells its structured fields by hand (src/http-signature/sf-write.ts, issue 12):
 * every header it writes must equal what `structured-headers`, the verifier's RFC 8941
 * library, serialises from the same values.
 */
import fc from 'fast-check'
import { serializeDictionary } from 'structured-headers'
import { describe, expect, it } from 'vitest'
import {
  COMPONENTS_WITH_BODY,
  COMPONENTS_WITHOUT_BODY,
  contentDigest,
  signRequest,
} from '../src/http-signature/sign.js'
import type { Signer } from '../src/keys.js'

const printable = fc
  .array(fc.integer({ min: 0x20, max: 0x7e }), { minLength: 1, maxLength: 30 })
  .map((cs) => String.fromCharCode(...cs))

describe('the hand-written RFC 8941 fields', () => {
  it('equal structured-headers for any key id, nonce, time, body and signature', async () => {
    await fc.assert(
      fc.asyncProperty(
        printable,
        fc.stringMatching(/^[A-Za-z0-9_-]{22,64}$/),
        fc.integer({ min: 0, max: 999_999_999_999_999 }),
        fc.uint8Array({ maxLength: 40 }),
        fc.uint8Array({ minLength: 64, maxLength: 64 }),
        async (fragment, nonce, created, body, sig) => {
          // Any printable fragment of a did:key id passes the key id check only when it is the
          // DID's; a URL agent takes any fragment.
          const signer: Signer = {
            alg: 'ed25519',
            keyId: `https://agent.example#${fragment.replace(/#/g, '')}x`,
            sign: async () => sig,
          }
          let headers: Record<string, string>
          try {
            headers = await signRequest({
              method: 'POST',
              url: 'https://relay.example/relay/publish',
              body,
              signer,
              created,
              nonce,
            })
          } catch {
            // a nonce that is not canonical base64url: refused before any field is written
            return
          }
          const components = body.length ? COMPONENTS_WITH_BODY : COMPONENTS_WITHOUT_BODY
          const member = [
            components.map((c) => [c, new Map()]),
            new Map<string, string | number>([
              ['created', created],
              ['nonce', nonce],
              ['keyid', signer.keyId],
              ['alg', 'ed25519'],
            ]),
          ] as const
          expect(headers['Signature-Input']).toBe(
            serializeDictionary(new Map([['sig1', member as never]])),
          )
          expect(headers.Signature).toBe(
            serializeDictionary(new Map([['sig1', [sig.slice().buffer, new Map()]]])),
          )
          if (body.length) {
            expect(headers['Content-Digest']).toBe(await contentDigest(body))
            const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', body))
            expect(headers['Content-Digest']).toBe(
              serializeDictionary(new Map([['sha-256', [digest.buffer, new Map()]]])),
            )
          }
        },
      ),
      { numRuns: 500 },
    )
  })
})
