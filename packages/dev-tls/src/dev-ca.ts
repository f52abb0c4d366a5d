/**
 * The machine's development CA: one per machine directory (`$AGENTMSG_HOME/dev-ca/`), issuing a
 * leaf for every development inbox and relay, so a client passes ONE `ca` (this CA's
 * certificate) and trusts all of them — never turning verification off (PROFILE §6).
 */
import { createPrivateKey, X509Certificate } from 'node:crypto'
import { mkdir, mkdtemp, open, readFile, rename, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { type CertAndKey, makeDevCa } from './x509.js'

/** The machine directory: `$AGENTMSG_HOME`, else `~/.agentmsg`. */
export function agentmsgHome(): string {
  return path.resolve(process.env.AGENTMSG_HOME || path.join(os.homedir(), '.agentmsg'))
}

/** A new development CA in memory only (valid 10 years, like mkcert's: local names only). */
export const createDevCa = (): Promise<CertAndKey> => makeDevCa(3650)

/**
 * The machine's development CA in `<home>/dev-ca/` (`ca.pem` 0644, the one file clients
 * trust; `ca-key.pem` 0600), made on first use, atomically and race-free without a lock: it is
 * written into a private temp directory renamed to `dev-ca`, and a rename onto an existing
 * non-empty directory fails, so of two processes starting at once one CA wins.
 *
 * @example
 * const ca = await loadDevCa()
 * console.log(`trust ${ca.certFile}`)
 */
export async function loadDevCa(options: { home?: string | undefined } = {}) {
  const home = path.resolve(options.home ?? agentmsgHome())
  const dir = path.join(home, 'dev-ca')
  const existing = await readCa(dir)
  if (existing) return existing
  await mkdir(home, { recursive: true, mode: 0o700 })
  const tmp = await mkdtemp(path.join(home, '.dev-ca-')) // 0700
  try {
    const made = await createDevCa()
    // Both files are complete and synced before the rename publishes them together.
    await writeSynced(path.join(tmp, 'ca-key.pem'), made.key, 0o600)
    await writeSynced(path.join(tmp, 'ca.pem'), made.cert, 0o644)
    await rename(tmp, dir)
  } catch (error) {
    await rm(tmp, { recursive: true, force: true })
    const code = (error as NodeJS.ErrnoException).code
    if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw error
    // Another process made the CA first: use theirs.
  }
  const loaded = await readCa(dir)
  if (!loaded) throw new Error(`development CA: ${dir} vanished while it was being made`)
  return loaded
}

/** The CA stored in `dir`, or undefined when there is none yet. */
async function readCa(dir: string) {
  const certFile = path.join(dir, 'ca.pem')
  const keyFile = path.join(dir, 'ca-key.pem')
  const read = async () => [await readIfThere(certFile), await readIfThere(keyFile)] as const
  let [cert, key] = await read()
  if (cert === undefined && key === undefined) return undefined
  // Another process may have published the directory between the two reads: read again.
  if (cert === undefined || key === undefined) [cert, key] = await read()
  const remove = `remove ${dir} to make a new one (clients then trust the new ca.pem)`
  if (cert === undefined || key === undefined) {
    const missing = cert === undefined ? 'ca.pem' : 'ca-key.pem'
    throw new Error(`development CA in ${dir} is incomplete (${missing} missing): ${remove}`)
  }
  const x509 = new X509Certificate(cert)
  if (!x509.ca || !x509.checkPrivateKey(createPrivateKey(key))) {
    throw new Error(`development CA in ${dir} is not a CA with its key: ${remove}`)
  }
  if (Date.parse(x509.validTo) <= Date.now()) {
    throw new Error(`development CA in ${dir} expired on ${x509.validTo}: ${remove}`)
  }
  return { cert, key, dir, certFile, keyFile }
}

/** A file's text, or undefined when it does not exist. */
export async function readIfThere(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  }
}

/** Write a new file with exactly `mode` (whatever the umask) and fsync it. */
export async function writeSynced(file: string, text: string, mode: number): Promise<void> {
  const fh = await open(file, 'wx', mode)
  try {
    await fh.chmod(mode)
    await fh.writeFile(text)
    await fh.sync()
  } finally {
    await fh.close()
  }
}
