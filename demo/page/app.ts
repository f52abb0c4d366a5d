/**
 * The demo page (`npm start`, served at /demo/ from the relay's own origin): three relay-only
 * agents side by side, Alice and Carol receiving over SSE and Bob over WebSocket, each with its
 * own IndexedDB database; the Node agent "Echo" of `npm start` to talk to; and a room, a topic
 * all four subscribe to, with its member list (room.ts). The server tells the page the relay's
 * URL (its canonical one: relay auth signs it, PROFILE §9) and Echo's id. The status line says
 * online only while every pane's relay stream is open (online.ts).
 */
import { openPane, type Pane } from './pane.js'
import { openRoom } from './room.js'

interface DemoConfig {
  relay: string
  echo: string
}

/** The room's topic: Echo subscribes to the same one (demo/node/serve.mjs). */
const ROOM = 'demo/room'

const status = document.getElementById('status') as HTMLElement
const container = document.getElementById('panes') as HTMLElement
const roomPanel = document.getElementById('room') as HTMLElement

const AGENTS = [
  { key: 'alice', name: 'Alice', dbName: 'agentmsg-demo-alice', mode: 'sse' },
  { key: 'bob', name: 'Bob', dbName: 'agentmsg-demo-bob', mode: 'ws' },
  { key: 'carol', name: 'Carol', dbName: 'agentmsg-demo-carol', mode: 'sse' },
] as const

/** Whether each pane's stream is open, by key; none yet: connecting. */
const online = new Map<string, boolean>()
let relay = ''

function showStatus(): void {
  if (status.dataset.ready !== 'true') return
  const down = AGENTS.filter((a) => online.get(a.key) === false).map((a) => a.name)
  const up = AGENTS.every((a) => online.get(a.key) === true)
  status.dataset.state = down.length > 0 ? 'offline' : up ? 'online' : 'connecting'
  status.textContent =
    down.length > 0
      ? `Offline: ${down.join(', ')} cannot reach the relay at ${relay}. They reconnect by themselves; messages wait at the relay.`
      : up
        ? `Online: Alice, Bob and Carol receive through the relay at ${relay}. Write in any pane, to one agent or to the room.`
        : `Connecting to the relay at ${relay}…`
}

async function main(): Promise<void> {
  const res = await fetch('/demo/config.json', { cache: 'no-store' })
  if (!res.ok) throw new Error(`the server is not ready (HTTP ${res.status}): reload in a moment`)
  const config = (await res.json()) as DemoConfig
  relay = config.relay
  const echoName = 'Echo (Node agent)'
  const names = new Map<string, string>([[config.echo, echoName]])
  const panes: Pane[] = []
  for (const a of AGENTS) {
    const onOnline = (now: boolean) => {
      online.set(a.key, now)
      showStatus()
    }
    panes.push(await openPane({ ...a, relay, container, names, room: ROOM, onOnline }))
  }
  for (const pane of panes) {
    await pane.start([...panes.filter((p) => p !== pane).map((p) => p.id), config.echo])
  }
  const people = [...panes, { id: config.echo, key: 'echo', name: echoName }]
  await openRoom({ topic: ROOM, panes, people, container: roomPanel })
  addEventListener('pagehide', () => void Promise.all(panes.map((p) => p.close())))
  status.dataset.ready = 'true'
  showStatus()
}

main().catch((error: unknown) => {
  status.textContent = `The demo could not start: ${error instanceof Error ? error.message : String(error)}`
  console.error(error)
})
