import { createPrivateKey, X509Certificate } from 'node:crypto'
import { chmod, mkdir, open, readFile, rename } from 'node:fs/promises'
import path from 'node:path'
import { createDevCa, type DevCa, type LoadDevCaOptions, loadDevCa } from './dev-ca.js'
import { issueLeaf, permittedName } from './x509.js'

/** A development server certificate, its key and the CA that issued it, PEM encoded. */
export interface DevCertificate {
  /** The server's (leaf) certificate: what the server presents, not a trust anchor. */
  cert: string
  /** The leaf's private key. Keep it private (mode 0600 on disk). */
  key: string
  /** SHA-256 fingerprint of the leaf, for people comparing certificates. */
  fingerprint: string
  /** The issuing development CA's certificate: clients pass THIS as their custom CA (`ca`). */
  ca: string
}

/** Options for {@link createDevCertificate}. */
export interface DevCertificateOptions {
  /** DNS names to cover (localhost, `*.localhost`, `*.test` only). @default ['localhost'] */
  hosts?: string[]
  /** IP addresses to cover (loopback only). @default ['127.0.0.1', '::1'] */
  ips?: string[]
  /** Validity in days. @default 30 */
  days?: number
  /** The CA to issue from, e.g. `await loadDevCa()`. @default a new CA for this certificate alone */
  ca?: DevCa
}

/**
 * A TLS server certificate for development and tests (P-256), valid for localhost, 127.0.0.1
 * and ::1 by default, issued by a development CA. Clients trust the CA (`ca`) — never turning
 * verification off (PROFILE §6); certificates issued by the same CA (`options.ca`) are then all
 * trusted through that one `ca`.
 *
 * The certificate is a leaf (`cA:false`, digitalSignature, serverAuth only), so its key cannot
 * mint certificates; the CA is name-constrained to localhost, `.test` and loopback addresses,
 * so even its key cannot mint one that clients accept for `bank.example`.
 *
 * @example
 * const { cert, key, ca } = await createDevCertificate()
 * const server = await serveInbox(handler, { port: 8443, tls: { cert, key } })
 * const sender = createSender({ fetch: createNodeFetch({ ca }) })
 */
export async function createDevCertificate(
  options: DevCertificateOptions = {},
): Promise<DevCertificate> {
  const names = { hosts: options.hosts ?? ['localhost'], ips: options.ips ?? ['127.0.0.1', '::1'] }
  const refused = [...names.hosts, ...names.ips].find((name) => !permittedName(name))
  if (refused !== undefined || names.hosts.length + names.ips.length === 0) {
    throw new TypeError(
      `development certificates cover only localhost, *.localhost, *.test and loopback addresses (the development CA's name constraints)${refused === undefined ? '' : `: got "${refused}"`}`,
    )
  }
  const ca = options.ca ?? (await createDevCa())
  const leaf = await issueLeaf(ca, names, options.days ?? 30)
  return { ...leaf, fingerprint: fingerprintOf(leaf.cert), ca: ca.cert }
}

/** The certificate's SHA-256 fingerprint (`AB:CD:…`). */
function fingerprintOf(cert: string): string {
  return new X509Certificate(cert).fingerprint256
}

/** A development certificate kept in a directory: {@link DevCertificate} and its files. */
export interface StoredDevCertificate extends DevCertificate {
  /** Absolute path of `cert.pem` (the leaf, what the server presents). */
  certFile: string
  /** Absolute path of `key.pem` (mode 0600). */
  keyFile: string
  /** Absolute path of the machine's development CA, `ca.pem`: the one file clients trust. */
  caFile: string
}

/** Options for {@link loadDevCertificate}: the names and the machine directory of the CA. */
export interface LoadDevCertificateOptions
  extends Omit<DevCertificateOptions, 'ca'>,
    LoadDevCaOptions {}

/**
 * The development certificate kept in `dir` (`cert.pem`, `key.pem`), issued by the machine's
 * development CA (`$AGENTMSG_HOME/dev-ca/ca.pem`, see {@link loadDevCa}): made on first use and
 * reused after, so clients trusting the CA keep working across restarts, and one `caFile`
 * trusts every development inbox and relay on the machine. The directory is created 0700 and
 * the key written 0600, each file atomically. A stored certificate that is not a leaf of the
 * current CA (a CA or self-signed one from an earlier version, another CA's, expiring within a
 * day, or not covering the requested names) is replaced.
 *
 * @example
 * const tls = await loadDevCertificate('./data/dev-tls')
 * console.log(`clients pass ${tls.caFile} as their CA`)
 * await serveRelay({ dataDir: './data', tls })
 */
export async function loadDevCertificate(
  dir: string,
  options: LoadDevCertificateOptions = {},
): Promise<StoredDevCertificate> {
  const ca = await loadDevCa(options.home === undefined ? {} : { home: options.home })
  const files = {
    certFile: path.resolve(dir, 'cert.pem'),
    keyFile: path.resolve(dir, 'key.pem'),
    caFile: ca.certFile,
  }
  const stored = await readStored(files.certFile, files.keyFile)
  if (stored && reusable(stored, ca.cert, options)) {
    return { ...stored, fingerprint: fingerprintOf(stored.cert), ca: ca.cert, ...files }
  }
  await mkdir(dir, { recursive: true, mode: 0o700 })
  const { home: _home, ...names } = options
  const made = await createDevCertificate({ ...names, ca })
  // The key first: a cert.pem on disk means its key is there too.
  await writeAtomic(files.keyFile, made.key, 0o600)
  await writeAtomic(files.certFile, made.cert, 0o644)
  return { ...made, ...files }
}

/** The stored leaf and key, or undefined when either file is missing. */
async function readStored(
  certFile: string,
  keyFile: string,
): Promise<{ cert: string; key: string } | undefined> {
  try {
    return { cert: await readFile(certFile, 'utf8'), key: await readFile(keyFile, 'utf8') }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
    return undefined
  }
}

/** Whether a stored leaf can be served again: see {@link loadDevCertificate}. */
function reusable(
  stored: { cert: string; key: string },
  caPem: string,
  options: LoadDevCertificateOptions,
): boolean {
  const leaf = new X509Certificate(stored.cert)
  const ca = new X509Certificate(caPem)
  if (leaf.ca || !leaf.checkIssued(ca) || !leaf.verify(ca.publicKey)) return false
  if (!leaf.checkPrivateKey(createPrivateKey(stored.key))) return false
  if (Date.parse(leaf.validTo) - Date.now() < 86_400_000) return false
  const hosts = options.hosts ?? ['localhost']
  const ips = options.ips ?? ['127.0.0.1', '::1']
  return (
    hosts.every((host) => leaf.checkHost(host, { wildcards: false }) !== undefined) &&
    ips.every((ip) => leaf.checkIP(ip) !== undefined)
  )
}

/** Write a file atomically (temp + fsync + rename) with the given mode. */
async function writeAtomic(file: string, text: string, mode: number): Promise<void> {
  const tmp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`
  const fh = await open(tmp, 'wx', mode)
  try {
    await fh.writeFile(text)
    await fh.sync()
  } finally {
    await fh.close()
  }
  // `open`'s mode is masked by the umask; the key must be 0600 whatever it is.
  await chmod(tmp, mode)
  await rename(tmp, file)
}
