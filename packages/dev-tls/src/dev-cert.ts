/**
 * Development server certificates (https also in development, PROFILE §6): leaves issued by a
 * development CA for local names only, kept in a directory and reused across restarts.
 */
import { createPrivateKey, X509Certificate } from 'node:crypto'
import { mkdir, rename } from 'node:fs/promises'
import path from 'node:path'
import { createDevCa, loadDevCa, readIfThere, writeSynced } from './dev-ca.js'
import { type CertAndKey, issueLeaf, permittedName } from './x509.js'

/**
 * A development server certificate (PEM): the leaf the server presents (`cert`, `key`), its
 * SHA-256 `fingerprint` for people comparing, and the issuing CA's certificate `ca`, which
 * clients pass as their custom CA.
 */
export type DevCertificate = CertAndKey & { fingerprint: string; ca: string }

/**
 * What a certificate covers: `hosts` (localhost, `*.localhost`, `*.test`; default
 * `['localhost']`), `ips` (loopback; default `['127.0.0.1', '::1']`), for `days` (30); issued
 * by `ca` (e.g. `await loadDevCa()`; default: a new CA for this certificate alone).
 */
type DevCertificateOptions = { hosts?: string[]; ips?: string[]; days?: number; ca?: CertAndKey }

const namesOf = (o: DevCertificateOptions) => ({
  hosts: o.hosts ?? ['localhost'],
  ips: o.ips ?? ['127.0.0.1', '::1'],
})

/**
 * A TLS server certificate for development and tests (P-256) issued by a development CA, which
 * clients trust (`ca`) instead of turning verification off (PROFILE §6). It is a leaf
 * (`cA:false`, serverAuth only), so its key cannot mint certificates, and the CA is
 * name-constrained to local names, so even its key cannot mint one for `bank.example`.
 *
 * @example
 * const { cert, key, ca } = await createDevCertificate()
 * const server = await serveHttps(inbox, { port: 8443, tls: { cert, key } })
 * const fetch = createNodeFetch({ ca })
 */
export async function createDevCertificate(
  options: DevCertificateOptions = {},
): Promise<DevCertificate> {
  const names = namesOf(options)
  const refused = [...names.hosts, ...names.ips].find((name) => !permittedName(name))
  if (refused !== undefined || names.hosts.length + names.ips.length === 0) {
    throw new TypeError(
      `development certificates cover only localhost, *.localhost, *.test and loopback addresses (the development CA's name constraints)${refused === undefined ? '' : `: got "${refused}"`}`,
    )
  }
  const ca = options.ca ?? (await createDevCa())
  const leaf = await issueLeaf(ca, names, options.days ?? 30)
  return { ...leaf, fingerprint: new X509Certificate(leaf.cert).fingerprint256, ca: ca.cert }
}

/**
 * The development certificate kept in `dir` (`cert.pem`, `key.pem` 0600, the directory 0700),
 * issued by the machine's development CA ({@link loadDevCa}) and reused across restarts: one
 * `caFile` trusts every development inbox and relay on the machine. A stored one that is not a
 * leaf of that CA, expires within a day or misses a requested name is replaced.
 *
 * @example
 * const tls = await loadDevCertificate('./data/dev-tls')
 * console.log(`clients pass ${tls.caFile} as their CA`)
 */
export async function loadDevCertificate(
  dir: string,
  options: Omit<DevCertificateOptions, 'ca'> & { home?: string } = {},
): Promise<DevCertificate & { certFile: string; keyFile: string; caFile: string }> {
  const { home, ...wanted } = options
  const ca = await loadDevCa({ home })
  const [certFile, keyFile] = [path.resolve(dir, 'cert.pem'), path.resolve(dir, 'key.pem')]
  const files = { certFile, keyFile, caFile: ca.certFile }
  const [cert, key] = [await readIfThere(certFile), await readIfThere(keyFile)]
  if (cert !== undefined && key !== undefined && reusable(cert, key, ca.cert, wanted)) {
    const fingerprint = new X509Certificate(cert).fingerprint256
    return { cert, key, fingerprint, ca: ca.cert, ...files }
  }
  await mkdir(dir, { recursive: true, mode: 0o700 })
  const made = await createDevCertificate({ ...wanted, ca })
  // The key first: a cert.pem on disk means its key is there too.
  for (const [file, text, mode] of [
    [keyFile, made.key, 0o600],
    [certFile, made.cert, 0o644],
  ] as const) {
    const tmp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`
    await writeSynced(tmp, text, mode)
    await rename(tmp, file)
  }
  return { ...made, ...files }
}

/** Whether a stored leaf can be served again: see {@link loadDevCertificate}. */
function reusable(cert: string, key: string, caPem: string, o: DevCertificateOptions): boolean {
  const leaf = new X509Certificate(cert)
  const ca = new X509Certificate(caPem)
  if (leaf.ca || !leaf.checkIssued(ca) || !leaf.verify(ca.publicKey)) return false
  if (!leaf.checkPrivateKey(createPrivateKey(key))) return false
  if (Date.parse(leaf.validTo) - Date.now() < 86_400_000) return false
  const { hosts, ips } = namesOf(o)
  return (
    hosts.every((host) => leaf.checkHost(host, { wildcards: false }) !== undefined) &&
    ips.every((ip) => leaf.checkIP(ip) !== undefined)
  )
}
