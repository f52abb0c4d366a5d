import { safeText } from '@agentmsg/client/node'
import { parseAgentId } from '@agentmsg/core'
import { onAgent } from './agent-ops.js'
import { commandWithArgs, inputError, listFlag, safeJson, usageError } from './command.js'

/** PROFILE §2's topic grammar. */
const TOPIC = /^[a-z0-9._/-]{1,128}$/

/** The TOPIC argument, checked before anything is opened (exit 2 otherwise). */
export function topicArg(topic: string): string {
  if (!TOPIC.test(topic))
    throw inputError(
      `topic ${JSON.stringify(topic.slice(0, 140))}: 1–128 characters of a-z 0-9 . _ / - (PROFILE §2)`,
    )
  return topic
}

/** Agent ids given as arguments or `--member` (repeatable, or `a,b`), each in normal form. */
export function agentArgs(ids: readonly string[] | undefined): string[] {
  return listFlag(ids).map((id) => {
    try {
      return parseAgentId(id, 'agent').id
    } catch {
      throw inputError(
        `${JSON.stringify(id.slice(0, 140))} is not an agent id (a did:key, or https://host[/path])`,
      )
    }
  })
}

const HELP = `usage: agentmsg group --dir D TOPIC list [--json]
       agentmsg group --dir D TOPIC add ID ...
       agentmsg group --dir D TOPIC remove ID ...

The group of TOPIC: a member list kept in D, which agentmsg publish --group seals for. Who is a
member decides who can open the NEXT message: removing one does not close what it already read.
Prints the members after the change (--json: {topic, members}).

examples:
  agentmsg group --dir ./alice team/room-1 add did:key:z6MkB… did:key:z6MkC…
  agentmsg group --dir ./alice team/room-1 list --json
`

const FLAGS = { dir: { type: 'string' }, json: { type: 'boolean' } } as const

/** `agentmsg group`: list or change D's member list of a topic. */
export const runGroup = commandWithArgs(HELP, FLAGS, async ({ values, positionals }) => {
  const [topic = '', action, ...ids] = positionals
  if (action !== 'list' && action !== 'add' && action !== 'remove')
    throw usageError('group', 'group needs TOPIC, then list, add ID … or remove ID …')
  if (action === 'list' ? ids.length > 0 : ids.length === 0)
    throw usageError(
      'group',
      `group ${action} takes ${action === 'list' ? 'no' : 'agent id'} arguments`,
    )
  const request = {
    op: 'group' as const,
    topic: topicArg(topic),
    action: action as 'list' | 'add' | 'remove',
    agents: agentArgs(ids),
  }
  const r = (await onAgent(values.dir!, request)) as { topic: string; members: string[] }
  const members = r.members.length ? r.members.map((m) => safeText(m)).join(' ') : 'no members'
  process.stdout.write(`${values.json ? safeJson(r) : `group ${r.topic}: ${members}`}\n`)
  return 0
})
