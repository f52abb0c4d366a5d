import { expect, test } from '@playwright/test'
import type { SmokeResults } from './entries/smoke.js'
import { runEntry } from './harness.js'

test('harness: secure context, WebCrypto Ed25519 and vectors served', async ({ page }) => {
  const r = await runEntry<SmokeResults>(page, 'smoke')
  expect(r.isSecureContext).toBe(true)
  expect(r.hasSubtle).toBe(true)
  expect(r.ed25519RoundTrip).toBe(true)
  expect(r.rfc8032Records).toBe(5)
  expect(r.userAgent).toContain('Chrome/')
})
