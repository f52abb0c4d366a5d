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
 * @example
 * const { cert, key } = await createDevCertificate()
 * const server = await serveInbox(handler, { port: 8443, tls: { cert, key } })
 * const sender = createSender({ ca: cert, ... })
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
        { name: 'basicConstraints', cA: true, critical: true },
        { name: 'keyUsage', digitalSignature: true, keyCertSign: true, critical: true },
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
  return { cert: result.cert, key: result.private, fingerprint: result.fingerprint }
}
