import { X509Certificate } from 'node:crypto'
import { chmod, mkdir, open, readFile, rename } from 'node:fs/promises'
import path from 'node:path'
import { generate } from 'selfsigned'

/** A development certificate and its key, PEM encoded. */
export interface DevCertificate {
  /** The certificate; clients pass it as their custom CA (`ca`). */
  cert: string
  /** The private key. Keep it private (mode 0600 on disk). */
  key: string
  /** SHA-256 fingerprint, for people comparing certificates. */
  fingerprint: string
}

/** Options for {@link createDevCertificate}. */
export interface DevCertificateOptions {
  /** DNS names to cover. @default ['localhost'] */
  hosts?: string[]
  /** IP addresses to cover. @default ['127.0.0.1', '::1'] */
  ips?: string[]
  /** Validity in days. @default 30 */
  days?: number
}

/**
 * A self-signed TLS certificate for development and tests (P-256), valid for localhost,
 * 127.0.0.1 and ::1 by default. Clients trust it by passing it as a custom CA — never by
 * turning verification off (PROFILE §6).
 *
 * It is a leaf for its own names, not a CA (`cA:false`; key usage `digitalSignature` only,
 * extended key usage `serverAuth`): a client trusting it trusts exactly this certificate, so a
 * leaked development key cannot mint certificates for other hosts (`bank.example`).
 *
 * @example
 * const { cert, key } = await createDevCertificate()
 * const server = await serveInbox(handler, { port: 8443, tls: { cert, key } })
 * const sender = createSender({ fetch: createNodeFetch({ ca: cert }) })
 */
export async function createDevCertificate(
  options: DevCertificateOptions = {},
): Promise<DevCertificate> {
  const hosts = options.hosts ?? ['localhost']
  const ips = options.ips ?? ['127.0.0.1', '::1']
  const now = Date.now()
  const result = await generate(
    [{ name: 'commonName', value: hosts[0] ?? ips[0] ?? 'localhost' }],
    {
      keyType: 'ec',
      curve: 'P-256',
      algorithm: 'sha256',
      notBeforeDate: new Date(now - 60_000),
      notAfterDate: new Date(now + (options.days ?? 30) * 86_400_000),
      extensions: [
        { name: 'basicConstraints', cA: false, critical: true },
        { name: 'keyUsage', digitalSignature: true, critical: true },
        { name: 'extKeyUsage', serverAuth: true },
        {
          name: 'subjectAltName',
          altNames: [
            ...hosts.map((value) => ({ type: 2 as const, value })),
            ...ips.map((ip) => ({ type: 7 as const, ip })),
          ],
        },
      ],
    },
  )
  return { cert: result.cert, key: result.private, fingerprint: fingerprintOf(result.cert) }
}

/** The certificate's SHA-256 fingerprint (`AB:CD:…`). */
function fingerprintOf(cert: string): string {
  return new X509Certificate(cert).fingerprint256
}

/** A development certificate kept in a directory: {@link DevCertificate} and its files. */
export interface StoredDevCertificate extends DevCertificate {
  /** Absolute path of `cert.pem`; clients pass this file as their CA. */
  certFile: string
  /** Absolute path of `key.pem` (mode 0600). */
  keyFile: string
}

/**
 * The development certificate kept in `dir` (`cert.pem`, `key.pem`): made with
 * {@link createDevCertificate} on first use and reused after, so clients that trust it keep
 * working across restarts. The directory is created 0700 and the key written 0600, each file
 * atomically (a crash never leaves half a key). A stored certificate that is a CA (made by an
 * earlier version, able to sign certificates for any host) is replaced by a new leaf; clients
 * then need the new `cert.pem`.
 *
 * @example
 * const tls = await loadDevCertificate('./data/dev-tls')
 * console.log(`clients pass ${tls.certFile} as their CA`)
 * await serveRelay({ dataDir: './data', tls })
 */
export async function loadDevCertificate(
  dir: string,
  options: DevCertificateOptions = {},
): Promise<StoredDevCertificate> {
  const certFile = path.resolve(dir, 'cert.pem')
  const keyFile = path.resolve(dir, 'key.pem')
  let stored: { cert: string; key: string } | undefined
  try {
    stored = { cert: await readFile(certFile, 'utf8'), key: await readFile(keyFile, 'utf8') }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
  }
  if (stored && !new X509Certificate(stored.cert).ca) {
    return { ...stored, fingerprint: fingerprintOf(stored.cert), certFile, keyFile }
  }
  await mkdir(dir, { recursive: true, mode: 0o700 })
  const made = await createDevCertificate(options)
  // The key first: a cert.pem on disk means its key is there too.
  await writeAtomic(keyFile, made.key, 0o600)
  await writeAtomic(certFile, made.cert, 0o644)
  return { ...made, certFile, keyFile }
}

/** Write a file atomically (temp + fsync + rename) with the given mode. */
async function writeAtomic(file: string, text: string, mode: number): Promise<void> {
  const tmp = `${file}.${process.pid}.tmp`
  const fh = await open(tmp, 'w', mode)
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
