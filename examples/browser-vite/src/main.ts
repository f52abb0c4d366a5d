// The root README's browser quick start as an app. Its relay is the page's own origin, as there
// (a page served by its relay), unless the build names one: VITE_AGENTMSG_RELAY (README.md).
import { createAgent } from '@agentmsg/client'
import { indexedDbStorage } from '@agentmsg/storage-indexeddb'

const relay = import.meta.env.VITE_AGENTMSG_RELAY || location.origin

/** A line in the console, as in the README, and on the page. */
function log(...parts: unknown[]): void {
  console.log(...parts)
  document.querySelector('#log')?.append(`${parts.join(' ')}\n`)
}

const agent = await createAgent({ storage: await indexedDbStorage(), relays: [relay] })
agent.on('message', async (m) => {
  log(m.level, m.knownContact, m.text) // verified, replay-checked, level-checked
  await agent.reply(m, 'got it')
})
log(`listening as ${agent.id}`) // the same did:key after a reload: it is in IndexedDB
