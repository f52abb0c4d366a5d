/**
 * Start the SQLite relay store's writer worker (sqlite-writer.ts).
 *
 * Built, the writer is `dist/sqlite-writer.js`, its own entry next to the module that starts it
 * (the store and its chunks all sit in `dist/`), and starts as a plain worker.
 *
 * From the TypeScript sources (the tests run them), this module is a `.ts` file and so is the
 * writer. Node 20 cannot run TypeScript, and loader hooks passed in a worker's `execArgv`
 * (`--import tsx`) do not reach the worker's own modules on Node 20 (nodejs/node#47747), so a
 * two-line bootstrap registers tsx (a dev dependency) inside the worker, then imports the writer.
 * That branch is never taken from `dist/`, which loads no dev tooling.
 */
import { Worker } from 'node:worker_threads'
import type { SqliteWriterData } from './sqlite-protocol.js'

/** True when `moduleUrl` is a TypeScript source file (run by vitest or tsx), not built code. */
export function isTypeScriptModule(moduleUrl: string | URL): boolean {
  return /\.[cm]?ts$/.test(new URL(moduleUrl).pathname)
}

/**
 * The writer's `execArgv`: a worker inherits its parent's, but `--input-type` (the parent's
 * `node --input-type=module -e …`) makes Node refuse a file as the worker's entry.
 */
export function sqliteWriterExecArgv(parent: readonly string[]): string[] {
  const args: string[] = []
  for (let i = 0; i < parent.length; i++) {
    const arg = parent[i]!
    if (arg === '--input-type') i++
    else if (!arg.startsWith('--input-type=')) args.push(arg)
  }
  return args
}

/** The source writer under tsx, registered in the worker itself. */
function startFromSource(writer: URL, workerData: SqliteWriterData): Worker {
  const tsx = import.meta.resolve('tsx/esm/api')
  const bootstrap =
    `import { register } from ${JSON.stringify(tsx)}\n` +
    `register()\n` +
    `await import(${JSON.stringify(writer.href)})\n`
  return new Worker(new URL(`data:text/javascript,${encodeURIComponent(bootstrap)}`), {
    workerData,
    execArgv: sqliteWriterExecArgv(process.execArgv),
  })
}

/** Start the writer for one store; it opens its own connection to `workerData.path`. */
export function startSqliteWriter(workerData: SqliteWriterData): Worker {
  if (isTypeScriptModule(import.meta.url)) {
    return startFromSource(new URL('./sqlite-writer.ts', import.meta.url), workerData)
  }
  return new Worker(new URL('./sqlite-writer.js', import.meta.url), {
    workerData,
    execArgv: sqliteWriterExecArgv(process.execArgv),
  })
}
