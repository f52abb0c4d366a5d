/**
 * Topics (SPEC §2.9, PROFILE §9 pub/sub): the grammar, and the subscriptions kept in storage
 * (`topics/<topic>`) that the receiver's live set starts from. Subscribing and groups are a
 * chunk of their own (./topic-ops.ts): an agent that uses no topics never loads them.
 */
import type { Storage } from '@agentmsg/core'
import { invalidFormat } from '@agentmsg/core/http'

/** PROFILE §2's topic grammar. */
const TOPIC = /^[a-z0-9._/-]{1,128}$/

/** `topic`, or `invalid_format`. */
export function checkTopic(topic: string): string {
  if (typeof topic !== 'string' || !TOPIC.test(topic)) {
    throw invalidFormat('must be 1–128 characters of [a-z0-9._/-] (PROFILE §2)', 'topic')
  }
  return topic
}

/** The topics stored as subscribed. */
export async function loadTopics(storage: Storage): Promise<Set<string>> {
  return new Set((await storage.list('topics/')).map(([key]) => key.slice('topics/'.length)))
}
