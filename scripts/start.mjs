// `npm start`: the main job. A local relay on its embedded SQLite store (data in .agentmsg/,
// https with a development certificate made on first run), plus the demo: two relay-only
// agents talk through it, one receiving over Server-Sent Events, the other over WebSocket, and
// the authentication-level walk-through of core. The relay keeps running until Ctrl-C.
import { mkdir, readFile, writeFile, chmod } from 'node:fs/promises'
import path from 'node:path'
import { WebSocket as WS } from 'ws'
import {
  createKeyResolver,
  createMessage,
  didKeyFromPublicKey,
  ed25519Signer,
  generateKeyPair,
  signMessage,
} from '@agentmsg/core'
import { serveRelay } from '@agentmsg/relay'
import { createAddressPolicy, createDevCertificate, createNodeFetch } from '@agentmsg/transport-https/node'
import { createRelayClient } from '@agentmsg/transport-relay'

const dataDir = path.resolve(process.env.AGENTMSG_DATA ?? '.agentmsg/relay')
const port = Number(process.env.PORT ?? 8443)
const step = (s) => console.log(`\n▶ ${s}`)

async function devCert(dir) {
  const certFile = path.join(dir, 'dev-cert.pem')
  const keyFile = path.join(dir, 'dev-key.pem')
  try {
    return { cert: await readFile(certFile, 'utf8'), key: await readFile(keyFile, 'utf8'), certFile }
  } catch {
    const { cert, key } = await createDevCertificate()
    await writeFile(keyFile, key, { mode: 0o600 })
    await chmod(keyFile, 0o600)
    await writeFile(certFile, cert)
    return { cert, key, certFile }
  }
}

await mkdir(dataDir, { recursive: true, mode: 0o700 })
const tls = await devCert(dataDir)
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

async function agent(name) {
  const keys = await generateKeyPair()
  const id = didKeyFromPublicKey(keys.publicKey)
  const signer = ed25519Signer(keys)
  const client = createRelayClient({
    relayUrl: relay.url, agent: id, signer, resolver: createKeyResolver(),
    fetch, streamFetch, WebSocket: TrustingWebSocket,
  })
  await client.subscribe()
  console.log(`  ${name}: ${id}`)
  return { name, id, signer, client }
}

step('two relay-only agents (did:key) subscribe their mailboxes')
const alice = await agent('alice')
const bob = await agent('bob')

const received = (who) => {
  let resolve
  const next = () => new Promise((r) => (resolve = r))
  let pending = next()
  return {
    handler: async ({ message, verified }) => {
      console.log(`  ${who.name} got "${message.body.parts[0].text}" from ${message.from.agent.slice(0, 24)}… (verified at level ${verified.level}; trace ${message.trace?.received?.[0]?.by})`)
      resolve(message)
    },
    wait: () => pending.then((m) => ((pending = next()), m)),
  }
}
const aliceInbox = received(alice)
const bobInbox = received(bob)
const onError = (e) => console.error('  stream error:', e.message)
const aliceStream = alice.client.stream(aliceInbox.handler, { mode: 'sse', onError })
const bobStream = bob.client.stream(bobInbox.handler, { mode: 'ws', onError })

step('bob → alice through the relay; alice receives over SSE (signature verified on delivery)')
const hello = await signMessage(
  createMessage({ from: bob.id, to: alice.id, conversationId: 'demo-1', sequence: 0, phase: 'greeting', text: 'Hi Alice, lunch on Tuesday?', relays: [relay.url] }),
  bob.signer,
)
await bob.client.publish(hello)
const got = await aliceInbox.wait()

step('alice replies to the relay in from.relays; bob receives over WebSocket')
const reply = await signMessage(
  createMessage({ from: alice.id, to: bob.id, conversationId: 'demo-1', sequence: 0, phase: 'response', text: 'Tuesday works.' }),
  alice.signer,
)
await alice.client.publish(reply, { relayUrl: got.from.relays[0] })
await bobInbox.wait()
aliceStream.close()
bobStream.close()

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
