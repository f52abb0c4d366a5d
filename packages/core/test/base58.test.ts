import fc from 'fast-check'
import { base58btc } from 'multiformats/bases/base58'
import { describe, expect, it } from 'vitest'
import { base58btcDecode, base58btcEncode } from '../src/base58.js'
import { isAgentMsgError } from '../src/errors.js'

// The hand-written base58btc replaced multiformats' (issue 12): same text for every byte string,
// same bytes back for every text multiformats accepts in the alphabet.
describe('base58btc', () => {
  it('encodes as multiformats does, and decodes back', () => {
    fc.assert(
      fc.property(
        fc.tuple(fc.integer({ min: 0, max: 4 }), fc.uint8Array({ maxLength: 80 })),
        ([zeros, tail]) => {
          const bytes = new Uint8Array([...new Uint8Array(zeros), ...tail])
          const text = base58btcEncode(bytes)
          expect(text).toBe(base58btc.baseEncode(bytes))
          expect(base58btcDecode(text)).toEqual(bytes)
        },
      ),
      { numRuns: 2000 },
    )
  })

  it('decodes any alphabet text as multiformats does', () => {
    const alphabet = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz'
    const text = fc
      .array(fc.integer({ min: 0, max: 57 }), { maxLength: 60 })
      .map((ds) => ds.map((d) => alphabet[d]).join(''))
    fc.assert(
      fc.property(text, (t) => {
        expect(base58btcDecode(t)).toEqual(base58btc.baseDecode(t))
      }),
      { numRuns: 2000 },
    )
  })

  it.each(['0', 'O', 'I', 'l', ' 2', '2 ', '+', 'é', '€', '\ud83d\ude00'])(
    'refuses %j as invalid_format',
    (bad) => {
      let error: unknown
      try {
        base58btcDecode(`2${bad}`, 'f')
      } catch (e) {
        error = e
      }
      expect(isAgentMsgError(error) && error.code === 'invalid_format').toBe(true)
    },
  )
})
