/**
 * A real relay on its SQLite store (`<dataDir>/relay.sqlite`, WAL mode) for the sealing tests,
 * and byte scans of everything it wrote to disk: what an operator, a backup or a stolen disk
 * would hold (SPEC §5.7.2, PROFILE §8: an untrusted relay must not see a body).
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { type RelayServer, serveRelay } from '@agentmsg/relay'
import type { Env } from './helpers.js'

export interface SqliteRelay {
  relay: RelayServer
  dataDir: string
  /** What the relay reported through `onError` (nothing, in a passing test). */
  errors: unknown[]
  /** `relay.sqlite`, `relay.sqlite-wal` and `relay.sqlite-shm` as they are now (absent ones left out). */
  storeFiles(): Promise<Map<string, Buffer>>
  /** Every file under the data directory whose bytes contain `needle` (UTF-8). */
  filesContaining(needle: string): Promise<string[]>
  /** Close the relay (the store checkpoints its WAL) and keep the directory for a last scan. */
  close(): Promise<void>
  /** Close if still open and delete the data directory. */
  remove(): Promise<void>
}

const STORE_FILES = ['relay.sqlite', 'relay.sqlite-wal', 'relay.sqlite-shm']

/** Serve a relay on 127.0.0.1 with the default SQLite store in a fresh directory. */
export async function startSqliteRelay(env: Env): Promise<SqliteRelay> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'agentmsg-sealed-relay-'))
  const errors: unknown[] = []
  const relay = await serveRelay({
    dataDir,
    tls: { cert: env.cert.cert, key: env.cert.key },
    allowPrivate: ['127.0.0.1'],
    ca: env.cert.ca,
    closeTimeoutMs: 1_000,
    onError: (e) => errors.push(e),
  })
  let closed = false
  const close = async () => {
    if (closed) return
    closed = true
    await relay.close()
  }
  return {
    relay,
    dataDir,
    errors,
    async storeFiles() {
      const files = new Map<string, Buffer>()
      for (const name of STORE_FILES) {
        const bytes = await readFile(path.join(dataDir, name)).catch(() => undefined)
        if (bytes) files.set(name, bytes)
      }
      return files
    },
    async filesContaining(needle) {
      const wanted = Buffer.from(needle, 'utf8')
      const found: string[] = []
      for (const file of await filesUnder(dataDir)) {
        if ((await readFile(file)).includes(wanted)) found.push(path.relative(dataDir, file))
      }
      return found
    },
    close,
    async remove() {
      await close()
      await rm(dataDir, { recursive: true, force: true })
    },
  }
}

/** Whether any of `files` contains `needle` as UTF-8 bytes. */
export function anyContains(files: Map<string, Buffer>, needle: string): boolean {
  const wanted = Buffer.from(needle, 'utf8')
  return [...files.values()].some((bytes) => bytes.includes(wanted))
}

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = []
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name)
    if (entry.isDirectory()) out.push(...(await filesUnder(full)))
    else if (entry.isFile()) out.push(full)
  }
  return out
}
