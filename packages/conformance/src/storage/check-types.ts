/** The shapes shared by the {@link Storage} checks and their runner. */
import type { JsonValue, Storage } from '@agentmsg/core'

/** What each check gets: a fresh store, and `reopen` for persistent adapters. */
export interface StorageCheckContext {
  storage: Storage
  reopen: () => Promise<Storage>
}

/** One check; throws on failure. */
export type StorageCheck = (ctx: StorageCheckContext) => Promise<void>

/** Registers a check under a name (the order of registration is the order of the run). */
export type AddStorageCheck = (name: string, check: StorageCheck) => void

/** The keys of `list` entries, in order. */
export function keysOf(entries: Array<[string, JsonValue]>): string[] {
  return entries.map(([k]) => k)
}
