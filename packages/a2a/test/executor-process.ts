/**
 * The A2A agent of the process tests, in a process of its own: a relay-only agentmsg agent (no
 * inbox) on files, serving the stock request handler with {@link EchoExecutor}. Config comes in
 * `A2A_EXECUTOR` as JSON `{relay, ca, dir, contacts}`; it prints `{"card": …}` once serving, then
 * `{"executed": n}` after each task, and stops on SIGTERM.
 */
import { AgentCard } from '@a2a-js/sdk'
import { createAddressPolicy, createNodeAgent } from '@agentmsg/client/node'
import { publicKeyFromDidKey } from '@agentmsg/core'
import { fsStorage } from '@agentmsg/storage-fs'
import { serveA2A } from '../src/index.js'
import { echoHandler } from './echo-executor.js'

interface Config {
  relay: string
  ca: string
  dir: string
  /** did:key agents pinned as known contacts: the only callers allowed. */
  contacts: string[]
}

const config = JSON.parse(process.env.A2A_EXECUTOR ?? '{}') as Config
const agent = await createNodeAgent({
  storage: await fsStorage({ dir: config.dir }),
  relays: [config.relay],
  ca: config.ca,
  addressPolicy: createAddressPolicy({ allow: ['127.0.0.1'] }),
})
for (const id of config.contacts) await agent.contacts.pin(id, publicKeyFromDidKey(id))
const { card, handler, executor } = echoHandler(agent, [config.relay])
const print = (line: unknown) => process.stdout.write(`${JSON.stringify(line)}\n`)
const execute = executor.execute.bind(executor)
executor.execute = async (request, bus) => {
  await execute(request, bus)
  print({ executed: executor.executed })
}
const server = serveA2A(agent, handler, { onError: (e) => process.stderr.write(`${e}\n`) })
print({ card: AgentCard.toJSON(card) })
process.once('SIGTERM', async () => {
  await server.close()
  await agent.close()
  process.exit(0)
})
