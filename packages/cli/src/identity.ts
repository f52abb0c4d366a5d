import { type IdentitySummary, onAgent } from './agent-ops.js'
import { command } from './command.js'

const IDENTITY_HELP = `usage: agentmsg identity --dir D [--json]

Print the identity in D: agent id, active key id, its fingerprint and public key, the
relays D remembers, and where a URL agent's identity document is served.
  --json   one JSON object: agent_id, kind, key_id, public_key, fingerprint, relays,
           document_url and document (URL agents)

example:
  agentmsg identity --dir ./alice
`

/** How code loads the agent of `dir` (the store is the identity; nothing to decode by hand). */
const snippet = (dir: string) =>
  `createAgent({ storage: await fsStorage({ dir: ${JSON.stringify(dir)} }) })`

/** The flags of both `identity` and `rotate`. */
const FLAGS = { dir: { type: 'string' }, json: { type: 'boolean' } } as const

export const runIdentity = command(IDENTITY_HELP, FLAGS, async ({ values }) => {
  const dir = values.dir!
  const id = (await onAgent(dir, { op: 'identity' })) as IdentitySummary
  if (values.json) {
    process.stdout.write(`${JSON.stringify({ ...id, dir, load: snippet(dir) })}\n`)
    return 0
  }
  const relays = id.relays.length ? id.relays.join(' ') : '(none: pass --relay to listen or init)'
  const pin = `agentmsg contacts --dir THEIR_DIR pin ${id.agent_id} ${id.public_key} --key-id ${id.key_id.split('#')[1]}`
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
      `  const agent = await ${snippet(dir)}`,
      'a peer pins this key (after comparing the fingerprint with you out of band):',
      `  ${pin}`,
      '',
    ].join('\n'),
  )
  return 0
})

const ROTATE_HELP = `usage: agentmsg rotate --dir D [--json]

URL agents: a new active key; the old one still verifies what it signed for the transition
period (PROFILE §4). Prints the new key id and fingerprint (for peers who pinned the old key).
A did:key cannot rotate: its key is its id (agentmsg init makes a new identity).
  --json   one JSON object: agent_id, key_id, public_key, fingerprint

example:
  agentmsg rotate --dir ./bob
`

export const runRotate = command(ROTATE_HELP, FLAGS, async ({ values }) => {
  const r = (await onAgent(values.dir!, { op: 'rotate' })) as IdentitySummary
  process.stdout.write(
    values.json
      ? `${JSON.stringify(r)}\n`
      : `rotated ${r.agent_id}: new key ${r.key_id}, fingerprint ${r.fingerprint}\n`,
  )
  return 0
})
