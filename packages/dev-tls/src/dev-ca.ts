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

/** Validity of a new development CA, in days (like mkcert's: long-lived, local names only). */
const CA_DAYS = 3650

/** A development CA (certificate and private key, PEM). */
export type DevCa = CertAndKey

/** The machine's development CA and its files. */
export interface StoredDevCa extends DevCa {
  /** The directory, `<home>/dev-ca` (mode 0700). */
  dir: string
  /** `ca.pem` (0644): the one file clients trust. */
  certFile: string
  /** `ca-key.pem` (0600). */
  keyFile: string
}

/** Options for {@link loadDevCa}. */
export interface LoadDevCaOptions {
  /** The machine directory. @default `$AGENTMSG_HOME`, else `~/.agentmsg` */
  home?: string
}

/** The machine directory: `$AGENTMSG_HOME`, else `~/.agentmsg`. */
export function agentmsgHome(): string {
  const fromEnv = process.env.AGENTMSG_HOME
  return path.resolve(fromEnv ? fromEnv : path.join(os.homedir(), '.agentmsg'))
}

/**
 * A new development CA kept in memory only (tests, throwaway servers): name-constrained to
 * localhost, `.test` and loopback addresses like the machine's.
 */
export function createDevCa(): Promise<DevCa> {
  return makeDevCa(CA_DAYS)
}

/**
 * The machine's development CA in `<home>/dev-ca/`, created on first use. Creation is atomic
 * and race-free without a lock: the CA is written into a fresh private temp directory that is
 * then renamed to `dev-ca`; a rename onto an existing non-empty directory fails, so when two
 * processes start at once one CA wins and the other reads it.
 *
 * @example
 * const ca = await loadDevCa()
 * console.log(`trust ${ca.certFile}`)
 */
export async function loadDevCa(options: LoadDevCaOptions = {}): Promise<StoredDevCa> {
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
async function readCa(dir: string): Promise<StoredDevCa | undefined> {
  const certFile = path.join(dir, 'ca.pem')
  const keyFile = path.join(dir, 'ca-key.pem')
  let cert = await readIfThere(certFile)
  let key = await readIfThere(keyFile)
  if (cert === undefined && key === undefined) return undefined
  if (cert === undefined || key === undefined) {
    // Another process may have published the directory between the two reads: read again.
    cert = await readIfThere(certFile)
    key = await readIfThere(keyFile)
  }
  if (cert === undefined || key === undefined) {
    throw new Error(
      `development CA in ${dir} is incomplete (${cert === undefined ? 'ca.pem' : 'ca-key.pem'} missing): remove that directory to make a new CA (clients then trust the new ca.pem)`,
    )
  }
  const x509 = new X509Certificate(cert)
  if (!x509.ca || !x509.checkPrivateKey(createPrivateKey(key))) {
    throw new Error(
      `development CA in ${dir} is not a CA with its key: remove that directory to make a new one`,
    )
  }
  if (Date.parse(x509.validTo) <= Date.now()) {
    throw new Error(
      `development CA in ${dir} expired on ${x509.validTo}: remove that directory to make a new one (clients then trust the new ca.pem)`,
    )
  }
  return { cert, key, dir, certFile, keyFile }
}

/** A file's text, or undefined when it does not exist. */
async function readIfThere(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  }
}

/** Write a new file with `mode` and fsync it (the directory rename publishes it). */
async function writeSynced(file: string, text: string, mode: number): Promise<void> {
  const fh = await open(file, 'wx', mode)
  try {
    // `open`'s mode is masked by the umask; the key must be exactly 0600 whatever it is.
    await fh.chmod(mode)
    await fh.writeFile(text)
    await fh.sync()
  } finally {
    await fh.close()
  }
}
