#!/usr/bin/env node
/**
 * The runtime matrix (issue 14): the isomorphic packages, built (dist/), run unchanged in Deno,
 * Bun and workerd. For each runtime this starts the runtime's own HTTPS server with
 * ./app.mjs, runs one session in it (./checks.mjs: conditions, vectors, sign/verify; then
 * ./agents.mjs against the Node side of ./node-side.mjs: a message over its inbox and over a
 * relay, both ways, ./legs.mjs), runs its README example (./examples.mjs), prints one line per
 * runtime (`deno 2.9.6: 12 passed, 0 failed`) and writes .tmp/report-runtimes.json, which
 * `npm test`'s summary counts. A runtime that cannot start fails the run with one line
 * (`workerd: cannot start: <reason>`).
 *
 *   node test/runtimes/run.mjs [deno] [bun] [workerd]    (all three by default)
 *
 * Builds nothing: run `npm run build` first.
 */
import { existsSync } from 'node:fs'
import { mkdir, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { build } from 'esbuild'
import { REPORTS } from '../../scripts/test-summary.mjs'
import { runExample } from './examples.mjs'
import { judgeLeg, LEGS, MODES, sendToLegs } from './legs.mjs'
import { runSession, startNodeSide } from './node-side.mjs'
import { killAll, locate, RUNTIMES, repoRoot } from './runtimes.mjs'

/** Where the report goes: the file `npm test`'s summary reads. */
const REPORT = REPORTS.runtimes
/** How long a session may run in the runtime before its agents give up waiting. */
const SESSION_MS = 45_000
/** How long the Node agent waits for a reply after the session ended. */
const REPLY_MS = 15_000

const DIST = ['core', 'client', 'transport-https', 'transport-relay', 'relay'].map(
  (p) => `packages/${p}/dist/index.js`,
)

/** packages/core/test/shared (TypeScript) as one plain module the runtimes import. */
async function bundleVectorChecks(outfile) {
  const shared = ['ed25519-vectors', 'jcs-vectors', 'didkey-vectors']
  await build({
    stdin: {
      contents: shared.map((f) => `export * from './packages/core/test/shared/${f}.ts'`).join('\n'),
      resolveDir: repoRoot,
      loader: 'ts',
    },
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    logLevel: 'silent',
  })
}

/** One session in a started runtime: its checks, then the legs judged from both ends. */
async function session(name, port, node) {
  const origin = `https://localhost:${port}`
  const checks = []
  const received = {}
  const errors = Object.fromEntries(LEGS.map((leg) => [leg, []]))
  let platform
  let ids
  let sending
  let ended = false
  const config = { agentId: origin, relayUrl: node.relayUrl, modes: MODES, timeoutMs: SESSION_MS }
  const onEvent = (event) => {
    if (event.type === 'platform') platform = { ...event, type: undefined }
    else if (event.type === 'check')
      checks.push({ name: event.name, ok: event.ok, detail: event.detail })
    else if (event.type === 'ready') {
      ids = event.ids
      sending = sendToLegs(node, ids)
    } else if (event.type === 'received') received[event.leg] = event
    else if (event.type === 'error') (errors[event.leg] ?? errors.inbox).push(event.error)
    else if (event.type === 'failure')
      checks.push({ name: 'the session ran', ok: false, detail: event.error })
    else if (event.type === 'end') ended = true
  }
  try {
    await runSession(origin, config, node.tls.ca, onEvent, SESSION_MS + 30_000)
  } catch (e) {
    checks.push({ name: 'the session ran', ok: false, detail: String(e?.message ?? e) })
  }
  if (!ended) checks.push({ name: 'the session ended', ok: false, detail: 'no end event' })
  // Every leg is judged, also when the session never got ready (then each fails: nothing sent).
  const sent = sending ? await sending : {}
  for (const leg of LEGS) {
    const reply = sent[leg]?.conversationId
      ? await node.waitForReply(sent[leg].conversationId, REPLY_MS)
      : undefined
    checks.push(
      judgeLeg(leg, {
        server: RUNTIMES[name].server,
        id: ids?.[leg],
        sent: sent[leg],
        received: received[leg],
        reply,
        errors: errors[leg],
      }),
    )
  }
  return { checks, platform }
}

/** Locate, start and test one runtime; resolves with its report entry. */
async function testRuntime(name, node, dir) {
  const located = locate(name)
  if (located.error) return { name, error: located.error }
  let proc
  try {
    proc = await RUNTIMES[name].start(located.bin, { files: node.files, dir })
  } catch (e) {
    return { name, version: located.version, error: String(e?.message ?? e) }
  }
  let result
  try {
    result = await session(name, proc.port, node)
  } finally {
    proc.child.kill('SIGKILL')
  }
  // What the runtime logged, kept in the report when something failed.
  const log = result.checks.every((c) => c.ok) ? undefined : proc.stderr().split('\n').slice(-40)
  result.checks.push(await runExample(name, located.bin, { files: node.files, dir }))
  const passed = result.checks.filter((c) => c.ok).length
  return {
    name,
    version: located.version,
    server: RUNTIMES[name].server,
    platform: result.platform,
    passed,
    failed: result.checks.length - passed,
    checks: result.checks,
    ...(log ? { log } : {}),
  }
}

/** The line a runtime's outcome prints, with its failed checks under it. */
function print(r) {
  if (r.error) {
    console.log(`${r.name}: cannot start: ${r.error}`)
    return
  }
  const p = r.platform
  const where = p ? ` (conditions ${p.conditions.join(', ')}; Ed25519 by ${p.provider})` : ''
  console.log(`${r.name} ${r.version}: ${r.passed} passed, ${r.failed} failed${where}`)
  for (const c of r.checks.filter((c) => !c.ok)) console.log(`  ✗ ${c.name}: ${c.detail}`)
}

async function main() {
  const names = process.argv.slice(2)
  const selected = names.length > 0 ? names : Object.keys(RUNTIMES)
  const unknown = selected.filter((n) => !(n in RUNTIMES))
  if (unknown.length) throw new Error(`unknown runtime ${unknown}: one of ${Object.keys(RUNTIMES)}`)
  const missing = DIST.filter((f) => !existsSync(path.join(repoRoot, f)))
  if (missing.length) throw new Error(`${missing.join(', ')} missing: run \`npm run build\` first`)

  const dir = path.join(repoRoot, '.tmp/runtimes')
  await rm(path.join(repoRoot, REPORT), { force: true })
  await mkdir(dir, { recursive: true })
  await bundleVectorChecks(path.join(dir, 'vector-checks.mjs'))
  const node = await startNodeSide(path.join(dir, 'tls'))
  const runtimes = []
  try {
    for (const name of selected) {
      const r = await testRuntime(name, node, dir)
      print(r)
      runtimes.push(r)
    }
  } finally {
    await node.close()
  }
  // A runtime that could not start counts as one failure: the run must not pass without it.
  const passed = runtimes.reduce((n, r) => n + (r.passed ?? 0), 0)
  const failed = runtimes.reduce((n, r) => n + (r.error ? 1 : r.failed), 0)
  await writeFile(
    path.join(repoRoot, REPORT),
    `${JSON.stringify({ runtimes, stats: { passed, failed } }, null, 2)}\n`,
  )
  console.log(`runtimes: ${passed} passed, ${failed} failed`)
  return failed === 0 && passed > 0
}

// No runtime outlives the run, also when it is interrupted.
process.on('exit', killAll)
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    killAll()
    process.exit(1)
  })
}

main().then(
  (ok) => {
    process.exitCode = ok ? 0 : 1
  },
  (e) => {
    console.log(`runtimes: cannot run: ${e?.message ?? e}`)
    console.error(e?.stack)
    process.exitCode = 1
  },
)
