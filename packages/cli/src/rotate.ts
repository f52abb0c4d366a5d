import { onAgent } from './agent-ops.js'
import { parseFlags, runCommand, usageError } from './command.js'

export const ROTATE_HELP = `usage: agentmsg rotate --dir D [--json]

URL agents: make a new active key; the old one is retired and still verifies messages signed
before the rotation for the transition period (PROFILE §4: 14 days). The identity document
lists the new key at once; while an agentmsg inbox runs on D it rotates and serves the new
document itself. Prints the new key id and its fingerprint (peers who pinned the old key
compare and pin the new one).

A did:key cannot rotate: its key is its id. Make a new identity (agentmsg init) instead.

  --json   one JSON object: agent_id, key_id, public_key, fingerprint

example:
  agentmsg rotate --dir ./bob
`

export function runRotate(argv: string[]): Promise<number> {
  return runCommand(ROTATE_HELP, argv, async () => {
    const { values } = parseFlags('rotate', argv, {
      dir: { type: 'string' },
      json: { type: 'boolean' },
    })
    if (!values.dir) throw usageError('rotate', 'rotate needs --dir D')
    const r = (await onAgent(values.dir, { op: 'rotate' })) as {
      agent_id: string
      key_id: string
      public_key: string
      fingerprint: string
    }
    process.stdout.write(
      values.json
        ? `${JSON.stringify(r)}\n`
        : `rotated ${r.agent_id}: new key ${r.key_id}, fingerprint ${r.fingerprint}\n`,
    )
    return 0
  })
}
