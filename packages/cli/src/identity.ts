import { fragmentOf, type IdentitySummary, onAgent } from './agent-ops.js'
import { parseFlags, runCommand, usageError } from './command.js'

export const IDENTITY_HELP = `usage: agentmsg identity --dir D [--json]

Print the identity in D: agent id, active key id, its fingerprint and public key, the
relays D remembers, and for a URL agent where its identity document is served. D is an
@agentmsg/storage-fs store, so code loads the same agent with
  createAgent({ storage: await fsStorage({ dir: D }) })
While an agentmsg inbox or listen runs on D, that process answers.

  --json   one JSON object: agent_id, kind, key_id, public_key, fingerprint, relays,
           document_url and document (URL agents)

example:
  agentmsg identity --dir ./alice
`

/** How code loads the agent of `dir` (the store is the identity; nothing to decode by hand). */
const snippet = (dir: string) =>
  `createAgent({ storage: await fsStorage({ dir: ${JSON.stringify(dir)} }) })`

export function runIdentity(argv: string[]): Promise<number> {
  return runCommand(IDENTITY_HELP, argv, async () => {
    const { values } = parseFlags('identity', argv, {
      dir: { type: 'string' },
      json: { type: 'boolean' },
    })
    if (!values.dir) throw usageError('identity', 'identity needs --dir D')
    const id = (await onAgent(values.dir, { op: 'identity' })) as IdentitySummary
    if (values.json) {
      process.stdout.write(
        `${JSON.stringify({ ...id, dir: values.dir, load: snippet(values.dir) })}\n`,
      )
      return 0
    }
    const relays = id.relays.length ? id.relays.join(' ') : '(none: pass --relay to listen or init)'
    const pin = `agentmsg contacts --dir THEIR_DIR pin ${id.agent_id} ${id.public_key} --key-id ${fragmentOf(id.key_id)}`
    process.stdout.write(
      [
        `agent        ${id.agent_id}`,
        `kind         ${id.kind}`,
        `key          ${id.key_id}`,
        `fingerprint  ${id.fingerprint}`,
        `public key   ${id.public_key}`,
        `relays       ${relays}`,
        ...(id.document_url ? [`document     ${id.document_url}`] : []),
        '',
        'use it from code (Node):',
        "  import { createAgent } from '@agentmsg/client'",
        "  import { fsStorage } from '@agentmsg/storage-fs'",
        `  const agent = await ${snippet(values.dir)}`,
        'a peer pins this key (after comparing the fingerprint with you out of band):',
        `  ${pin}`,
        '',
      ].join('\n'),
    )
    return 0
  })
}
