import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'

const src = (p: string) => fileURLToPath(new URL(`./packages/${p}`, import.meta.url))

// Tests run against the TypeScript sources. The `#…` platform imports resolve to their Node
// variants here; the browser variants are exercised by the Playwright suite against `dist/`.
export default defineConfig({
  resolve: {
    alias: [
      { find: /^@agentmsg\/core$/, replacement: src('core/src/index.ts') },
      { find: /^@agentmsg\/core\/noble$/, replacement: src('core/src/noble.ts') },
      { find: /^@agentmsg\/core\/x25519$/, replacement: src('core/src/x25519-entry.ts') },
      { find: /^#crypto-default$/, replacement: src('core/src/crypto/default.node.ts') },
      { find: /^@agentmsg\/transport-https$/, replacement: src('transport-https/src/index.ts') },
      { find: /^@agentmsg\/transport-https\/node$/, replacement: src('transport-https/src/node.ts') },
      { find: /^@agentmsg\/transport-https\/pipeline$/, replacement: src('transport-https/src/pipeline.ts') },
      { find: /^@agentmsg\/transport-relay$/, replacement: src('transport-relay/src/index.ts') },
      { find: /^#relay-ws$/, replacement: src('transport-relay/src/ws-node.ts') },
      { find: /^@agentmsg\/relay$/, replacement: src('relay/src/index.ts') },
      { find: /^@agentmsg\/storage-fs$/, replacement: src('storage-fs/src/index.ts') },
      { find: /^@agentmsg\/storage-indexeddb$/, replacement: src('storage-indexeddb/src/index.ts') },
      { find: /^@agentmsg\/client$/, replacement: src('client/src/index.ts') },
      { find: /^@agentmsg\/client\/node$/, replacement: src('client/src/node.ts') },
    ],
  },
  test: {
    include: ['packages/*/test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
  },
})
