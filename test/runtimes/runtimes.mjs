/**
 * How the orchestrator finds and starts each runtime. The binaries come from the root
 * devDependencies `deno`, `bun` and `workerd` (npm packages that ship them), linked in
 * node_modules/.bin; nothing is downloaded. Each runtime serves ./app.mjs over https on a port
 * it picks and reports: Deno and Bun print `{"listening":port}`, workerd writes its `listen`
 * control message on descriptor 3.
 */
import { spawn, spawnSync } from 'node:child_process'
import { accessSync, constants } from 'node:fs'
import { copyFile, mkdir } from 'node:fs/promises'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url))
export const here = path.join(repoRoot, 'test/runtimes')
export const vectorsDir = path.resolve(repoRoot, 'test/vectors')

/** How long a runtime may take to start listening. */
const START_MS = 30_000

/** The linked binary of `name`, and its version; `{ error }` when it cannot run. */
export function locate(name) {
  const bin = path.join(repoRoot, 'node_modules/.bin', name)
  try {
    accessSync(bin, constants.X_OK)
  } catch {
    return { error: `${bin} is missing: run \`npm install\` (the ${name} devDependency ships it)` }
  }
  const out = spawnSync(bin, ['--version'], { encoding: 'utf8', timeout: 20_000 })
  const first = (out.stdout || '').split('\n')[0].trim()
  if (out.status !== 0 || !first) {
    const why = out.error?.message ?? (out.stderr || '').trim().split('\n').at(-1) ?? ''
    return { error: `${bin} --version failed${why ? `: ${why}` : ''}` }
  }
  // "deno 2.9.6 (stable, …)", "1.4.5", "workerd 2026-11-17"
  const version = first.replace(/^(deno|workerd)\s+/, '').replace(/\s.*$/, '')
  return { bin, version }
}

/**
 * Bundle `entry` as wrangler bundles a Worker: everything inlined, package conditions
 * `workerd`, `worker`, `browser`. Fails if a package's source (not its dist/) got in.
 */
export async function bundleForWorkerd(entry, outfile) {
  const result = await build({
    entryPoints: [entry],
    outfile,
    absWorkingDir: repoRoot,
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    mainFields: ['browser', 'module', 'main'],
    conditions: ['workerd', 'worker', 'browser'],
    target: 'es2022',
    metafile: true,
    logLevel: 'silent',
  })
  const fromSrc = Object.keys(result.metafile.inputs).filter((p) =>
    /^packages\/[^/]+\/src\//.test(p),
  )
  if (fromSrc.length > 0) throw new Error(`the worker bundles package sources: ${fromSrc}`)
}

const children = new Set()

/** Remember `child` so that {@link killAll} ends it if the orchestrator stops early. */
export function track(child) {
  children.add(child)
  child.once('exit', () => children.delete(child))
  return child
}

/** End every runtime process still running (the orchestrator's exit and signal handlers). */
export function killAll() {
  for (const child of children) child.kill('SIGKILL')
}

/** Wait for the port the program reports; rejects with the reason it did not start. */
function started(child, portFrom, label) {
  track(child)
  return new Promise((resolve, reject) => {
    let stderr = ''
    child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d))
    const fail = (why) => {
      clearTimeout(timer)
      child.kill('SIGKILL')
      const last = stderr.trim().split('\n').filter(Boolean).slice(-3).join(' | ')
      reject(new Error(`${why}${last ? `: ${last}` : ''}`))
    }
    const timer = setTimeout(() => fail(`${label} did not listen within ${START_MS} ms`), START_MS)
    child.once('error', (e) => fail(e.message))
    child.once('exit', (code, signal) => fail(`${label} exited (${signal ?? `code ${code}`})`))
    portFrom((port) => {
      clearTimeout(timer)
      child.removeAllListeners('exit')
      child.removeAllListeners('error')
      resolve({ child, port, stderr: () => stderr })
    })
  })
}

/** Calls `found(port)` for the first `{"listening":port}` line on `stream`. */
function listeningLine(stream) {
  return (found) => {
    let buffered = ''
    stream.setEncoding('utf8').on('data', (d) => {
      buffered += d
      const m = /\{"listening":(\d+)\}/.exec(buffered)
      if (m) {
        found(Number(m[1]))
        buffered = ''
      }
    })
  }
}

/** Settings the Deno and Bun entries read from AGENTMSG_RUNTIME_TEST. */
const settings = (files) =>
  JSON.stringify({
    hostname: '127.0.0.1',
    certFile: files.certFile,
    keyFile: files.keyFile,
    vectorsDir,
  })

export const RUNTIMES = {
  deno: {
    server: 'Deno.serve',
    start(bin, { files, dir }) {
      // Deno resolves the packages in node_modules by itself (a package.json is there), with
      // the conditions deno, node, import. --cert: its fetch and WebSocket trust the dev CA.
      const child = spawn(
        bin,
        [
          'run',
          '--no-lock',
          `--cert=${files.caFile}`,
          '--allow-net',
          `--allow-read=${vectorsDir},${dir}`,
          '--allow-env',
          path.join(here, 'deno.test-entry.mjs'),
        ],
        {
          cwd: repoRoot,
          env: { ...process.env, AGENTMSG_RUNTIME_TEST: settings(files) },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      )
      return started(child, listeningLine(child.stdout), 'deno')
    },
  },
  bun: {
    server: 'Bun.serve',
    start(bin, { files }) {
      // NODE_EXTRA_CA_CERTS: Bun's fetch and WebSocket trust the dev CA besides the system roots.
      const child = spawn(bin, [path.join(here, 'bun.test-entry.mjs')], {
        cwd: repoRoot,
        env: {
          ...process.env,
          NODE_EXTRA_CA_CERTS: files.caFile,
          AGENTMSG_RUNTIME_TEST: settings(files),
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      return started(child, listeningLine(child.stdout), 'bun')
    },
  },
  workerd: {
    server: 'a workerd fetch handler',
    async start(bin, { files, dir }) {
      const work = path.join(dir, 'workerd')
      await mkdir(work, { recursive: true })
      await bundleForWorkerd(path.join(here, 'workerd/worker.mjs'), path.join(work, 'worker.js'))
      await copyFile(path.join(here, 'workerd/config.capnp'), path.join(work, 'config.capnp'))
      for (const f of ['certFile', 'keyFile', 'caFile']) {
        await copyFile(files[f], path.join(work, path.basename(files[f])))
      }
      const child = spawn(
        bin,
        [
          'serve',
          'config.capnp',
          '--socket-addr=https=127.0.0.1:0',
          `--directory-path=vectors=${vectorsDir}`,
          '--control-fd=3',
        ],
        { cwd: work, env: process.env, stdio: ['ignore', 'pipe', 'pipe', 'pipe'] },
      )
      child.stdout.resume()
      const control = (found) => {
        let buffered = ''
        child.stdio[3].setEncoding('utf8').on('data', (d) => {
          buffered += d
          const m = /"event":"listen","socket":"https","port":(\d+)/.exec(buffered)
          if (m) found(Number(m[1]))
        })
      }
      return started(child, control, 'workerd')
    },
  },
}
