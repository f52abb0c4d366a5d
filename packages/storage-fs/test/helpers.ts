import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build, type Plugin } from 'esbuild'

export const tempDir = (): Promise<string> => mkdtemp(join(tmpdir(), 'agentmsg-fs-'))

const CHILD = fileURLToPath(new URL('./fixtures/child.mjs', import.meta.url))
const SOURCE = fileURLToPath(new URL('../src/index.ts', import.meta.url))

/** Leaves npm packages to Node's resolver; `@agentmsg/*` is bundled from its sources. */
const externalNpm: Plugin = {
  name: 'external-npm',
  setup(b) {
    b.onResolve({ filter: /^[^./#]/ }, (args) =>
      args.path.startsWith('@agentmsg/') ? undefined : { path: args.path, external: true },
    )
  },
}

/** Bundles src/index.ts into `<dir>/storage-fs.mjs` for child processes; returns its path. */
export async function bundleSource(dir: string): Promise<string> {
  const outfile = join(dir, 'storage-fs.mjs')
  await build({
    entryPoints: [SOURCE],
    bundle: true,
    platform: 'node',
    format: 'esm',
    // The workspace packages from their sources, as the tests see them; the rest from npm.
    conditions: ['@agentmsg/source'],
    plugins: [externalNpm],
    outfile,
    logLevel: 'silent',
  })
  return outfile
}

/** Starts the child fixture; `lines` collects its stdout lines as they arrive. */
export function startChild(
  bundle: string,
  args: string[],
): { child: ChildProcess; lines: string[]; waitFor: (line: RegExp) => Promise<void> } {
  const child = spawn(process.execPath, [CHILD, bundle, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const lines: string[] = []
  let buffered = ''
  let stderr = ''
  const waiters: Array<() => void> = []
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    buffered += chunk
    const parts = buffered.split('\n')
    buffered = parts.pop()!
    lines.push(...parts)
    for (const wake of waiters.splice(0)) wake()
  })
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
  const waitFor = (line: RegExp): Promise<void> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        if (lines.some((l) => line.test(l))) resolve()
        else if (child.exitCode !== null || child.signalCode !== null) {
          reject(new Error(`child exited before ${line}: ${stderr}`))
        } else waiters.push(check)
      }
      child.once('exit', () => setImmediate(check))
      check()
    })
  return { child, lines, waitFor }
}

/** SIGKILLs `child` and waits until it is gone. */
export async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const gone = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGKILL')
  await gone
}
