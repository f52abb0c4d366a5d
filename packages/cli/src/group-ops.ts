/**
 * What `subscribe`, `unsubscribe`, `publish` and `group` do to a directory's agent, run by
 * agent-ops.ts here or in the process that holds the directory. Topics live on the agent's own
 * relays (PROFILE §9 pub/sub); a message is sealed for the members named (PROFILE §8).
 */
import type { Agent, Content } from '@agentmsg/client/node'
import { CliError } from './command.js'

export type TopicRequest =
  | { op: 'subscribe' | 'unsubscribe'; topic: string; relays?: string[] }
  | { op: 'group'; topic: string; action: 'list' | 'add' | 'remove'; agents: string[] }
  | {
      op: 'publish'
      topic: string
      content: Content
      members: string[]
      /** Also the members of the directory's group for the topic. */
      group: boolean
      plaintext: boolean
      relays?: string[]
    }

/** What `subscribe` and `unsubscribe` report. */
export interface TopicsSummary {
  topic: string
  was_subscribed: boolean
  relays: string[]
  topics: string[]
}

/** The agent's `relays`, which `--relay` (`given`) must be among when a running agent has its own. */
function onRelays(given: string[] | undefined, relays: string[]): void {
  const other = (given ?? []).filter((r) => !relays.includes(r))
  if (other.length)
    throw new CliError(
      'in_use',
      `the running agent holding this directory is on ${relays.join(' ') || 'no relay'}, not ${other.join(' ')} — leave out --relay, or stop it first`,
    )
  if (relays.length === 0)
    throw new CliError('usage', 'this agent remembers no relay: pass --relay URL (PROFILE §9)', 2)
}

export async function performTopic(agent: Agent, request: TopicRequest, relays: string[]) {
  const { topic } = request
  if (request.op === 'group') {
    const group = agent.group(topic)
    if (request.action === 'add') await group.add(...request.agents)
    if (request.action === 'remove') await group.remove(...request.agents)
    return { topic, members: await group.members() }
  }
  onRelays(request.relays, relays)
  if (request.op === 'publish') {
    const stored = request.group ? await agent.group(topic).members() : []
    const members = [...new Set([...request.members, ...stored])]
    if (members.length === 0 && !request.plaintext)
      throw new CliError(
        'not_found',
        `the group ${topic} has no members — add them with agentmsg group --dir D ${topic} add ID, or pass --plaintext`,
      )
    return agent.publish(topic, request.content, { members, allowPlaintext: request.plaintext })
  }
  const was_subscribed = agent.topics().includes(topic)
  await (request.op === 'subscribe' ? agent.subscribe(topic) : agent.unsubscribe(topic))
  return { topic, was_subscribed, relays, topics: agent.topics() } satisfies TopicsSummary
}
