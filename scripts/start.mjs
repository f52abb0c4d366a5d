// `npm start`: build what changed (scripts/build-incremental.mjs), then a local relay on its
// embedded SQLite store (https, with a certificate from the machine's development CA) serving
// the browser demo from its own origin at /demo/, the Node agent the page talks to, and a short
// terminal demo (demo/node/). The relay keeps running until Ctrl-C.
//
//   PORT            port of the relay and the page (default 8443; 0 picks a free one)
//   AGENTMSG_HOME   machine directory: the development CA (dev-ca/, shared with the agentmsg
//                   CLI: default ~/.agentmsg), and here also the relay's data (relay/) and the
//                   Echo agent (demo/) (default <repo>/.agentmsg)
//   AGENTMSG_DATA   the relay's data directory instead (default $AGENTMSG_HOME/relay)
//   AGENTMSG_SKIP_BUILD=1 or --no-build   use the packages as built (tests)
//   --verbose                             show the build's output (its size table, publint);
//                                         by default one line, or all of it when it fails
//   AGENTMSG_DEMO_EXIT=1                  stop after the terminal demo (tests)
//
// Errors are one line, `agentmsg: <code>: <what to do>`: exit 2 for a bad setting, 1 otherwise.
import { spawnSync } from 'node:child_process'
import { createServer } from 'node:net'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const HOST = '127.0.0.1'
const DEFAULT_PORT = 8443

function fail(code, message, exitCode) {
  console.error(`agentmsg: ${code}: ${message}`)
  process.exit(exitCode)
}

function parsePort(raw) {
  if (raw === undefined || raw === '') return DEFAULT_PORT
  const port = /^\d{1,5}$/.test(raw) ? Number(raw) : Number.NaN
  if (!(port >= 0 && port <= 65535)) {
    fail(
      'invalid_port',
      `PORT=${JSON.stringify(raw)} is not a port number: use 1-65535 (0 picks a free one), e.g. PORT=${DEFAULT_PORT} npm start`,
      2,
    )
  }
  return port
}

/** The one line for a port the relay cannot listen on, or undefined for any other error. */
function portProblem(error, port) {
  if (error?.code === 'EADDRINUSE') {
    return `${HOST}:${port} is already in use (another npm start?): stop that process or pick another port, e.g. PORT=${port + 1} npm start`
  }
  if (error?.code === 'EACCES') {
    return `${HOST}:${port} needs privileges this user lacks: pick a port above 1023, e.g. PORT=${DEFAULT_PORT} npm start`
  }
  return undefined
}

/** Fail now, before a build, when the port is taken. (The relay's own listen checks again.) */
async function checkPort(port) {
  if (port === 0) return
  const error = await new Promise((resolve) => {
    const probe = createServer()
    probe.once('error', resolve)
    probe.listen(port, HOST, () => probe.close(() => resolve(undefined)))
  })
  if (error) fail('port_unavailable', portProblem(error, port) ?? String(error.message), 1)
}

const port = parsePort(process.env.PORT)
await checkPort(port)
// The development CA is the machine's, as the CLI's ($AGENTMSG_HOME/dev-ca, else ~/.agentmsg):
// the relay here and `agentmsg inbox`/`relay --dev-tls` trust each other with one file. The
// relay's data and Echo stay with this clone.
const home = path.resolve(process.env.AGENTMSG_HOME || path.join(root, '.agentmsg'))
const dataDir = path.resolve(process.env.AGENTMSG_DATA || path.join(home, 'relay'))

if (!process.argv.includes('--no-build') && !process.env.AGENTMSG_SKIP_BUILD) {
  const verbose = process.argv.includes('--verbose')
  const build = spawnSync(process.execPath, [path.join(root, 'scripts', 'build-incremental.mjs')], {
    cwd: root,
    stdio: verbose ? 'inherit' : ['ignore', 'pipe', 'pipe'],
    encoding: 'utf8',
  })
  if (build.status !== 0) {
    if (!verbose) process.stderr.write(`${build.stdout}${build.stderr}`)
    process.exit(build.status ?? 1)
  }
  if (!verbose) console.log(buildSummary(build.stdout))
}

/** The build's output in one line: what it built, or that nothing changed. */
function buildSummary(out) {
  const built = [...out.matchAll(/^build: built (\S+)/gm)].map((m) => m[1])
  if (built.length === 0)
    return out.split('\n').find((l) => l.startsWith('build:')) ?? 'build: done'
  return `build: built ${built.join(', ')}; sizes and publint checked (npm start -- --verbose shows them)`
}

// Imported only now: they are the built packages.
const { safeText } = await import('@agentmsg/client')
const { startDemo } = await import('../demo/node/serve.mjs')
const { runTerminalDemo } = await import('../demo/node/terminal-demo.mjs')
const step = (s) => console.log(`\n▶ ${s}`)
// Log lines carry what strangers sent Echo: escaped, so they cannot drive the terminal.
const log = (line) => console.log(safeText(line))

step('the relay (SQLite), the demo page on its origin, and Echo, a Node agent')
let demo
try {
  demo = await startDemo({ host: HOST, port, home, dataDir, log })
} catch (error) {
  const problem = portProblem(error, port)
  if (problem) fail('port_unavailable', problem, 1)
  fail('start_failed', safeText(`${error?.message ?? error} (data in ${dataDir})`), 1)
}
console.log(`  relay listening on ${demo.relayUrl} (SQLite in ${dataDir})`)
console.log(`  Echo answers every message: ${demo.echoId}`)

step('two Node agents talk through the relay: alice over SSE, bob over WebSocket')
try {
  await runTerminalDemo({ relayUrl: demo.relayUrl, ca: demo.ca, log })
} catch (error) {
  await demo.close()
  fail('start_failed', safeText(`the terminal demo failed: ${error?.message ?? error}`), 1)
}
console.log('  (the authentication-level walk-through: node scripts/demo-levels.mjs)')

if (process.env.AGENTMSG_DEMO_EXIT) {
  await demo.close()
  process.exit(0)
}

step('the browser demo')
console.log(`  open        ${demo.pageUrl}`)
console.log(`  trust once  ${demo.caFile}`)
console.log(
  '              agentmsg dev-ca trust   (the development CA: the commands that make this OS and its browsers trust it; --run runs them. Node: --ca / NODE_EXTRA_CA_CERTS)',
)
console.log('\nThe relay keeps running. Ctrl-C stops it.')

let stopping = false
const stop = async () => {
  if (stopping) return
  stopping = true
  await demo.close()
  process.exit(0)
}
process.once('SIGINT', stop)
process.once('SIGTERM', stop)
