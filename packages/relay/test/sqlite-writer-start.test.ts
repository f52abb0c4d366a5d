/**
 * Where the SQLite store finds its writer worker: built, `dist/sqlite-writer.js` next to the
 * store's module, started by plain Node; from the sources (every other store test), the `.ts`
 * writer under tsx. This file builds nothing: the dist case reads what `npm run build` made.
 */
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import { afterAll, describe, expect, it } from 'vitest'
import { isTypeScriptModule, sqliteWriterExecArgv } from '../src/store/sqlite.js'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
const DIST = fileURLToPath(new URL('../dist/', import.meta.url))

const dirs: string[] = []
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

describe('sqlite writer location', () => {
  it('tells TypeScript sources from built modules', () => {
    expect(isTypeScriptModule('file:///repo/packages/relay/src/store/sqlite-writer-start.ts')).toBe(
      true,
    )
    expect(isTypeScriptModule('file:///repo/packages/relay/src/store/x.mts')).toBe(true)
    expect(isTypeScriptModule('file:///repo/packages/relay/dist/index.js')).toBe(false)
    expect(isTypeScriptModule('file:///repo/packages/relay/dist/chunk-ABC123.js')).toBe(false)
    // A query (cache busting by a loader) does not change what the file is.
    expect(isTypeScriptModule('file:///repo/src/store/sqlite.ts?v=1')).toBe(true)
    expect(isTypeScriptModule(new URL('file:///repo/dist/index.js#x'))).toBe(false)
  })

  it("passes the parent's execArgv on, except --input-type (a file entry refuses it)", () => {
    expect(
      sqliteWriterExecArgv(['--enable-source-maps', '--input-type=module', '-e', 'x']),
    ).toEqual(['--enable-source-maps', '-e', 'x'])
    expect(sqliteWriterExecArgv(['--input-type', 'module', '--no-warnings'])).toEqual([
      '--no-warnings',
    ])
    expect(sqliteWriterExecArgv([])).toEqual([])
  })

  it('has the source writer next to the module that starts it', () => {
    const start = new URL('../src/store/sqlite.ts', import.meta.url)
    expect(existsSync(new URL('./sqlite-writer.ts', start))).toBe(true)
  })

  it('opens a store from dist/ with plain Node (no TypeScript loader), even from `node -e`', async () => {
    if (!existsSync(join(DIST, 'index.js'))) {
      throw new Error(`${DIST}index.js is missing: run "npm run build" first (npm test does)`)
    }
    // Every module of dist/ sits in dist/ itself, so `new URL('./sqlite-writer.js',
    // import.meta.url)` from the store's module (index.js or a chunk) names this file.
    expect(existsSync(join(DIST, 'sqlite-writer.js'))).toBe(true)

    const dir = mkdtempSync(join(tmpdir(), 'relay-dist-store-'))
    dirs.push(dir)
    const path = join(dir, 'relay.db')
    const script = `
      const { sqliteRelayStore } = await import('@agentmsg/relay/sqlite')
      const store = sqliteRelayStore({ path: process.argv[1] })
      const now = Date.now()
      const json = '{"message_id":"m1"}'
      const results = await store.publish({
        mailboxes: ['alice'], from: 'did:key:z6MkDist', messageId: 'm1', json,
        bytes: json.length, receivedAt: now, expiresAt: now + 60_000,
      })
      await store.close()
      process.stdout.write(JSON.stringify(results))
    `
    const out = await new Promise<string>((resolve, reject) => {
      const child = spawn(process.execPath, ['--input-type=module', '-e', script, path], {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      let stdout = ''
      let stderr = ''
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
      child.on('error', reject)
      child.on('close', (code) =>
        code === 0 ? resolve(stdout) : reject(new Error(`exit ${code}: ${stderr}`)),
      )
    })
    const results = JSON.parse(out) as Array<{ mailbox: string; duplicate: boolean }>
    expect(results).toMatchObject([{ mailbox: 'alice', duplicate: false }])
    // Committed by the writer worker: another connection reads it from the file.
    const db = new Database(path, { readonly: true })
    try {
      expect(db.prepare('SELECT message_id FROM entries').pluck().all()).toEqual(['m1'])
    } finally {
      db.close()
    }
  })
})
