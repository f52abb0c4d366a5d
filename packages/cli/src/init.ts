import { createAgentDir } from './agent-dir.js'

/** `agentmsg init`: a new identity in the directory's store; prints one JSON line. */
export async function runInit(values: {
  dir?: string
  url?: string
  display?: string
  force?: boolean
}): Promise<number> {
  if (!values.dir) throw new Error('init needs --dir')
  const agent = await createAgentDir(values.dir, values)
  process.stdout.write(
    JSON.stringify({
      agent_id: agent.agentId,
      key_id: agent.keyId,
      dir: values.dir,
      kind: agent.kind,
    }) + '\n',
  )
  return 0
}
