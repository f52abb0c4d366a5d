import { createAgentDir } from './agent-dir.js'
import { command, relayFlags, usageError } from './command.js'

const INIT_HELP = `usage: agentmsg init --dir D [--url https://host:port] [--display NAME] [--relay URL ...]
                     [--force]

Create an identity in D (an @agentmsg/storage-fs store, secret key in 0600 files): a did:key,
or a URL agent with --url. Prints one JSON line: {agent_id, key_id, dir, kind}.
  --relay URL  relays where the agent listens (remembered in D; in a URL agent's document)
  --force      replace the identity D holds (everything D holds is removed first)

examples:
  agentmsg init --dir ./alice
  agentmsg init --dir ./bob --url https://127.0.0.1:8444 --display Bob
`

const INIT_FLAGS = {
  dir: { type: 'string' },
  url: { type: 'string' },
  display: { type: 'string' },
  relay: { type: 'string', multiple: true },
  force: { type: 'boolean' },
} as const

/** `agentmsg init`: a new identity in the directory's store; prints one JSON line. */
export const runInit = command(INIT_HELP, INIT_FLAGS, async ({ values }) => {
  // https only, also in development (PROFILE §2, §6).
  if (values.url !== undefined && !/^https:\/\//i.test(values.url))
    throw usageError('init', `--url ${values.url}: a URL agent id is https://host[:port][/path]`)
  const { url, display, force } = values
  const relays = relayFlags('init', values.relay)
  const made = await createAgentDir(values.dir!, { url, display, force, relays })
  process.stdout.write(`${JSON.stringify(made)}\n`)
  return 0
})
