/**
 * Which package export conditions the runtime (or, for workerd, the bundler in front of it)
 * matches: each `#is-<condition>` of ./package.json resolves to yes.mjs only under that
 * condition. The packages' own `#…` platform imports (core's `#crypto-default`, transport-relay's
 * `#relay-ws`) are chosen by the same conditions, so this says which of their files ran.
 */
import isBrowser from '#is-browser'
import isBun from '#is-bun'
import isDeno from '#is-deno'
import isImport from '#is-import'
import isModule from '#is-module'
import isNode from '#is-node'
import isWorker from '#is-worker'
import isWorkerd from '#is-workerd'

const matched = {
  deno: isDeno,
  bun: isBun,
  workerd: isWorkerd,
  worker: isWorker,
  browser: isBrowser,
  node: isNode,
  import: isImport,
  module: isModule,
}

/** The conditions matched, in the order a package would list them. */
export const conditions = Object.keys(matched).filter((c) => matched[c])
