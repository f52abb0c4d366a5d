import { createAgentDir } from './agent-dir.js'
import { parseFlags, relayFlags, runCommand, usageError } from './command.js'

export const INIT_HELP = `usage: agentmsg init --dir D [--url https://host:port] [--display NAME] [--relay URL ...]
                     [--force]

Create an identity in D (an @agentmsg/storage-fs store, secret key in 0600 files): a did:key,
or a URL agent with --url. Prints one JSON line: {agent_id, key_id, dir, kind}.
  --relay URL  relays where the agent listens (remembered in D; in a URL agent's document)
  --force      replace the identity D holds (everything D holds is removed first)

examples:
  agentmsg init --dir ./alice
  agentmsg init --dir ./bob --url https://127.0.0.1:8444 --display Bob
`

/** `agentmsg init`: a new identity in the directory's store; prints one JSON line. */
export function runInit(argv: string[]): Promise<number> {
  return runCommand(INIT_HELP, argv, async () => {
    const { values } = parseFlags('init', argv, {
      dir: { type: 'string' },
      url: { type: 'string' },
      display: { type: 'string' },
      relay: { type: 'string', multiple: true },
      force: { type: 'boolean' },
    })
    if (!values.dir) throw usageError('init', 'init needs --dir D')
    // https only, also in development (PROFILE §2, §6).
    if (values.url !== undefined && !/^https:\/\//i.test(values.url))
      throw usageError('init', `--url ${values.url}: a URL agent id is https://host[:port][/path]`)
    const agent = await createAgentDir(values.dir, {
      ...(values.url !== undefined ? { url: values.url } : {}),
      ...(values.display !== undefined ? { display: values.display } : {}),
      ...(values.relay?.length ? { relays: relayFlags('init', values.relay) } : {}),
      ...(values.force ? { force: true } : {}),
    })
    process.stdout.write(
      `${JSON.stringify({ agent_id: agent.agentId, key_id: agent.keyId, dir: values.dir, kind: agent.kind })}\n`,
    )
    return 0
  })
}
