/**
 * `@agentmsg/storage-indexeddb` in real Chromium, against the built package (`dist/`): the
 * shared Storage contract (with reopen), IndexedDB-specific checks (atomic batches that fail
 * inside the transaction, isolation of databases and stores, versionchange, `'\uffff'` keys),
 * and persistence across a real `page.reload()` on the same origin.
 */
import { expect, type Page, test } from '@playwright/test'
import type { StorageCheckResult, StorageIndexedDbResults } from './entries/storage-indexeddb.js'
import { runEntry } from './harness.js'

/** Checks in `runStorageContract` with `reopen` (49 + 2 persistence checks). */
const CONTRACT_CHECKS = 51
const EXTRA_CHECKS = 10
const RELOAD_CHECKS = 2

function expectAllPass(results: StorageCheckResult[], count: number): void {
  const failed = results.filter((r) => !r.ok)
  expect(failed, failed.map((r) => `${r.name}: ${r.error}`).join('\n')).toEqual([])
  expect(results).toHaveLength(count)
  expect(new Set(results.map((r) => r.name)).size).toBe(count)
}

test.describe('@agentmsg/storage-indexeddb in Chromium (dist)', () => {
  let page: Page
  let first: Extract<StorageIndexedDbResults, { phase: 'first' }>
  let reloaded: Extract<StorageIndexedDbResults, { phase: 'after-reload' }>

  test.beforeAll(async ({ browser }) => {
    page = await browser.newPage()
    const results = await runEntry<StorageIndexedDbResults>(page, 'storage-indexeddb')
    if (results.phase !== 'first') throw new Error(`unexpected phase ${results.phase}`)
    first = results
    // Same tab, same origin: IndexedDB (and the entry's sessionStorage mark) survive.
    await page.reload()
    await page.waitForFunction(() => '__agentmsgResults' in globalThis, undefined, {
      timeout: 60_000,
    })
    const after = await page.evaluate(
      () =>
        (globalThis as { __agentmsgResults?: Promise<StorageIndexedDbResults> }).__agentmsgResults,
    )
    if (after?.phase !== 'after-reload') throw new Error(`unexpected phase ${after?.phase}`)
    reloaded = after
  })

  test.afterAll(async () => {
    await page?.close()
  })

  test(`the Storage contract passes (${CONTRACT_CHECKS} checks, with reopen)`, () => {
    expectAllPass(first.contract, CONTRACT_CHECKS)
    expect(first.contract.filter((r) => r.name.startsWith('persistence > '))).toHaveLength(2)
  })

  test(`IndexedDB-specific checks pass (${EXTRA_CHECKS})`, () => {
    expectAllPass(first.extra, EXTRA_CHECKS)
  })

  test('batch atomicity with a failing op inside the transaction', () => {
    const batch = first.extra.filter((r) => r.name.startsWith('batch: '))
    expect(batch).toHaveLength(3)
    for (const r of batch) expect(r.ok, `${r.name}: ${r.error}`).toBe(true)
  })

  test('two storages with different dbNames are isolated', () => {
    const r = first.extra.find((c) => c.name === 'two storages with different dbNames are isolated')
    expect(r?.ok, r?.error).toBe(true)
  })

  test(`data persists across page.reload() (${RELOAD_CHECKS} checks)`, () => {
    expectAllPass(reloaded.reload, RELOAD_CHECKS)
  })
})
