import { chmod } from 'node:fs/promises'

/**
 * Whether a key holds a secret: it starts with one of `prefixes`, or has one right after a
 * `/` — the same key seen through a `namespacedStorage` view (`agents/alice/keys/self/…`,
 * `https/keys/secret/…`), so an agent's seeds and introduction tokens are private wherever
 * its storage is mounted.
 */
export function privateKeyTest(prefixes: readonly string[]): (key: string) => boolean {
  const inner = prefixes.map((p) => `/${p}`)
  return (key) => prefixes.some((p) => key.startsWith(p)) || inner.some((p) => key.includes(p))
}

/**
 * Files of private keys written by an earlier version with mode 0644 are made 0600 at open
 * (a rewrite would fix them too, but a seed is rarely rewritten).
 */
export async function restrictPrivateFiles(
  keys: Iterable<string>,
  isPrivate: (key: string) => boolean,
  pathOf: (key: string) => string,
): Promise<void> {
  if (process.platform === 'win32') return
  for (const key of keys) {
    if (isPrivate(key)) await chmod(pathOf(key), 0o600)
  }
}
