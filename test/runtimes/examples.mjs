/**
 * The README's runtime examples (section "Runtimes") are these files, run here as written: each
 * README block must equal its file in ./examples, and the file must run in its runtime, serve an
 * inbox, and print what a Node did:key agent sends it. A README block whose first line is a
 * comment naming a runtime (`// deno …`, `// bun …`, `// workerd …`) is left to this suite by
 * test/docs (readme-blocks.ts).
 */
import { spawn } from 'node:child_process'
import { copyFile, mkdir, readFile } from 'node:fs/promises'
import https from 'node:https'
import path from 'node:path'
import { createAddressPolicy, createNodeAgent } from '@agentmsg/client/node'
import { freePort } from './node-side.mjs'
import { bundleForWorkerd, here, repoRoot, track } from './runtimes.mjs'

const examples = path.join(here, 'examples')
const TEXT = 'hello from node'
const START_MS = 30_000
const PRINT_MS = 15_000

/** The fenced blocks of README.md: `{ lang, code }`. */
async function readmeFences() {
  const text = await readFile(path.join(repoRoot, 'README.md'), 'utf8')
  return [...text.matchAll(/^```(\S*)\n([\s\S]*?)^```\s*$/gm)].map((m) => ({
    lang: m[1],
    code: m[2],
  }))
}

/** The files of `name`'s example, each with the fence language its README block has. */
const FILES = {
  deno: [['deno.js', 'js']],
  bun: [['bun.js', 'js']],
  workerd: [
    ['workerd.js', 'js'],
    ['workerd.capnp', 'capnp'],
  ],
}

/** The arguments the example's first line says to run it with (its file name replaced). */
function commandLine(code, name, file) {
  const first = code.split('\n')[0]
  const m = new RegExp(`^// ${name} (.*?)inbox\\.js\\b`).exec(first)
  if (!m) throw new Error(`${name} example: its first line must be "// ${name} … inbox.js …"`)
  return [...m[1].trim().split(/\s+/).filter(Boolean), file]
}

/** Spawn the example as its first line says; workerd's is bundled and served from `work`. */
async function start(name, bin, code, work, env) {
  const file = path.join(examples, `${name}.js`)
  if (name !== 'workerd') {
    return spawn(bin, commandLine(code, name, file), {
      cwd: work,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
  }
  await bundleForWorkerd(file, path.join(work, 'worker.js'))
  await copyFile(path.join(examples, 'workerd.capnp'), path.join(work, 'config.capnp'))
  return spawn(bin, ['serve', 'config.capnp', `--socket-addr=https=127.0.0.1:${env.PORT}`], {
    cwd: work,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
}

/** GET `url` trusting `ca`: its status, or 0 when nothing answered. */
function status(url, ca) {
  return new Promise((resolve) => {
    https
      .get(url, { ca }, (res) => {
        res.resume()
        resolve(res.statusCode ?? 0)
      })
      .on('error', () => resolve(0))
  })
}

/** Wait until `check()` is truthy, polling every 100 ms for at most `ms`. */
async function until(check, ms) {
  for (const end = Date.now() + ms; Date.now() < end; ) {
    if (await check()) return true
    await new Promise((r) => setTimeout(r, 100))
  }
  return false
}

/** Run `name`'s README example; resolves with one check. */
export async function runExample(name, bin, { files, dir }) {
  const check = { name: 'README example: its inbox receives a message from Node', ok: false }
  const fences = await readmeFences()
  const problems = []
  const sources = {}
  for (const [file, lang] of FILES[name]) {
    sources[file] = await readFile(path.join(examples, file), 'utf8')
    if (!fences.some((f) => f.lang === lang && f.code === sources[file])) {
      problems.push(`README.md has no \`\`\`${lang} block equal to test/runtimes/examples/${file}`)
    }
  }
  // And the converse: every block test/docs leaves to this runtime is one of its files.
  const marked = fences.filter((f) => f.code.startsWith(`// ${name} `))
  for (const f of marked.filter((f) => !Object.values(sources).includes(f.code))) {
    problems.push(
      `README.md has a "// ${name}" block that is no example file: ${f.code.split('\n')[0]}`,
    )
  }
  if (problems.length) return { ...check, detail: problems.join('; ') }

  const work = path.join(dir, `example-${name}`)
  await mkdir(work, { recursive: true })
  await copyFile(files.certFile, path.join(work, 'cert.pem'))
  await copyFile(files.keyFile, path.join(work, 'key.pem'))
  const ca = await readFile(files.caFile, 'utf8')
  const port = await freePort()
  const agentUrl = `https://localhost:${port}`
  const env = { ...process.env, AGENT_URL: agentUrl, PORT: String(port) }
  const child = track(await start(name, bin, sources[`${name}.js`], work, env))
  let output = ''
  child.stdout.setEncoding('utf8').on('data', (d) => (output += d))
  child.stderr.setEncoding('utf8').on('data', (d) => (output += d))
  const sender = await createNodeAgent({
    sendOnly: true,
    ca,
    addressPolicy: createAddressPolicy({ allow: ['127.0.0.1'] }),
  })
  try {
    const identity = `${agentUrl}/.well-known/agentmsg/identity`
    if (!(await until(async () => (await status(identity, ca)) === 200, START_MS))) {
      return {
        ...check,
        detail: `its identity document was not served within ${START_MS} ms: ${output.trim()}`,
      }
    }
    const sent = await sender.send(agentUrl, TEXT)
    const printed = await until(
      () => output.split('\n').some((l) => l.trim() === `3 ${TEXT}`),
      PRINT_MS,
    )
    return {
      ...check,
      ok: printed && sent.route === 'direct',
      detail: printed
        ? `sent ${sent.route} over https; printed "3 ${TEXT}"`
        : `it did not print "3 ${TEXT}" within ${PRINT_MS} ms: ${output.trim()}`,
    }
  } catch (e) {
    return { ...check, detail: `${e?.message ?? e}; output: ${output.trim()}` }
  } finally {
    child.kill('SIGKILL')
    await sender.close()
  }
}
