/** Shared fixtures of the signing and verification tests: two did:key agents and small helpers. */
import { fixtureAgent } from '@agentmsg/conformance'
import type { AgentMsgError } from '../src/errors.js'

export const alice = await fixtureAgent()
export const bob = await fixtureAgent()

/** The error `p` rejects with. */
export async function failure(p: Promise<unknown>): Promise<AgentMsgError> {
  try {
    await p
  } catch (e) {
    return e as AgentMsgError
  }
  throw new Error('expected verification to fail')
}

/** A deep copy through JSON, to tamper with without touching the original. */
export const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v))
