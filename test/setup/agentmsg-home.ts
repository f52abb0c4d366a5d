/**
 * Global setup of the test runners (vitest and Playwright): a temporary machine directory as
 * `AGENTMSG_HOME`, so the development CA (`$AGENTMSG_HOME/dev-ca/`) and anything else kept
 * there never touch the real home. It is set before any worker starts — both runners pass the
 * environment on — and removed at the end.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'

export default function setup(): () => void {
  const home = mkdtempSync(path.join(tmpdir(), 'agentmsg-test-home-'))
  process.env.AGENTMSG_HOME = home
  return () => rmSync(home, { recursive: true, force: true })
}
