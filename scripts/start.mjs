// `npm start`: the main job. A local relay on its embedded SQLite store (data in .agentmsg/,
// https with a development certificate made on first run), plus the demo: two relay-only
// agents talk through it, one receiving over Server-Sent Events, the other over WebSocket, and
// the authentication-level walk-through of core. The relay keeps running until Ctrl-C.
import { mkdir } from 'node:fs/promises'
import path from 'node:path'
import { createAgent } from '@agentmsg/client'
import { serveRelay } from '@agentmsg/relay'
import {
  createAddressPolicy,
  createNodeFetch,
  loadDevCertificate,
} from '@agentmsg/transport-https/node'
import { WebSocket as WS } from 'ws'

const dataDir = path.resolve(process.env.AGENTMSG_DATA ?? '.agentmsg/relay')
const port = Number(process.env.PORT ?? 8443)
const step = (s) => console.log(`\n▶ ${s}`)

await mkdir(dataDir, { recursive: true, mode: 0o700 })
// Where `agentmsg relay --data DIR --dev-tls` keeps it, so both serve the same certificate.
const tls = await loadDevCertificate(path.join(dataDir, 'dev-tls'))
const relay = await serveRelay({ host: '127.0.0.1', port, dataDir, tls })
step(`relay listening on ${relay.url} (SQLite in ${dataDir}; dev certificate ${tls.certFile})`)

// Clients trust the development certificate as a custom CA; verification stays on.
const policy = createAddressPolicy({ allow: ['127.0.0.1'] })
const fetch = createNodeFetch({ ca: tls.cert, addressPolicy: policy })
const streamFetch = createNodeFetch({ ca: tls.cert, addressPolicy: policy, timeoutMs: 0 })
class TrustingWebSocket extends WS {
  constructor(url, protocols) {
    super(url, protocols, { ca: tls.cert })
  }
}

// A relay-only agent as an application makes one: a did:key identity (new each run, in memory),
// its mailbox on the local relay, streamed over SSE or WebSocket into its receive pipeline,
// which verifies every message before the application sees it.
async function agent(name, mode) {
  const a = await createAgent({
    relays: [relay.url],
    mode,
    fetch,
    streamFetch,
    WebSocket: TrustingWebSocket,
    onError: (e) => console.error(`  ${name}: ${e?.message ?? e}`),
  })
  a.on('error', (e) => console.error(`  ${name} error: ${e.error?.message ?? e.error}`))
  console.log(`  ${name}: ${a.id} (receives over ${mode === 'ws' ? 'WebSocket' : 'SSE'})`)
  // Messages as they arrive, buffered from here on.
  const inbox = a.messages()[Symbol.asyncIterator]()
  const next = async () => {
    const { value: m } = await inbox.next()
    console.log(
      `  ${name} got "${m.text}" from ${m.from.slice(0, 24)}… (verified at level ${m.level}; trace ${m.message.trace?.received?.[0]?.by})`,
    )
    return m
  }
  return { name, agent: a, next }
}

step('two relay-only agents (did:key) open their mailboxes on the relay')
const alice = await agent('alice', 'sse')
const bob = await agent('bob', 'ws')

step('bob → alice through the relay; alice receives over SSE (signature verified on delivery)')
const sent = await bob.agent.send(alice.agent.id, 'Hi Alice, lunch on Tuesday?', {
  relays: [relay.url],
})
console.log(`  bob sent ${sent.messageId} (route ${sent.route} via ${sent.relayUrl})`)
const got = await alice.next()

step('alice replies to the relay in from.relays; bob receives over WebSocket')
await alice.agent.reply(got, 'Tuesday works.')
await bob.next()
await alice.agent.close()
await bob.agent.close()

step('authentication levels, introductions and replay protection (core)')
await import('./demo-levels.mjs')

if (process.env.AGENTMSG_DEMO_EXIT) {
  await relay.close()
} else {
  console.log(`\nThe relay keeps running at ${relay.url}. Ctrl-C stops it.`)
  const stop = async () => {
    await relay.close()
    process.exit(0)
  }
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
}
