/**
 * Building the development certificates (X.509 with `@peculiar/x509` over Node's WebCrypto):
 * a development CA limited by name constraints to local names, and server leaves it issues.
 * Policy (where the CA lives, reuse, file modes) is in node-dev-ca.ts and dev-cert.ts.
 */
import { createPrivateKey, KeyObject, randomBytes, webcrypto } from 'node:crypto'
import { isIP } from 'node:net'
import { AsnConvert } from '@peculiar/asn1-schema'
import {
  GeneralName,
  GeneralSubtree,
  GeneralSubtrees,
  id_ce_nameConstraints,
  NameConstraints,
} from '@peculiar/asn1-x509'
import * as x509 from '@peculiar/x509'

const crypto = webcrypto as unknown as Crypto
const P256 = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const
const DAY = 86_400_000

/** A certificate and its private key (PKCS#8), PEM encoded. */
export interface CertAndKey {
  cert: string
  key: string
}

/**
 * What the development CA may certify (RFC 5280 §4.2.1.10 name constraints): `localhost` and
 * its subdomains, the RFC 6761 testing domain `.test`, and the loopback addresses. A leaked
 * development CA key therefore cannot mint a certificate that clients accept for
 * `bank.example` (OpenSSL, and so Node, enforces the constraints while building the chain).
 */
export const DEV_CA_PERMITTED = {
  dns: ['localhost', 'test'],
  ip: ['127.0.0.0/8', '::1/128'],
} as const

/** Whether a leaf for `name` would pass the development CA's name constraints. */
export function permittedName(name: string): boolean {
  const version = isIP(name)
  if (version === 4) return name.startsWith('127.')
  if (version === 6) return name === '::1' || name === '0:0:0:0:0:0:0:1'
  const lower = name.toLowerCase().replace(/\.$/, '')
  return DEV_CA_PERMITTED.dns.some((base) => lower === base || lower.endsWith(`.${base}`))
}

/** A random positive serial number (16 bytes, RFC 5280 §4.1.2.2: at most 20 octets). */
function serial(): string {
  const bytes = randomBytes(16)
  bytes[0] = 0x40 | ((bytes[0] ?? 0) & 0x3f) // positive, no leading zero byte
  return bytes.toString('hex')
}

/** A fresh P-256 key pair, extractable so the private key can be stored as PEM. */
function newKeys(): Promise<CryptoKeyPair> {
  return crypto.subtle.generateKey(P256, true, ['sign', 'verify']) as Promise<CryptoKeyPair>
}

/** PKCS#8 PEM of a WebCrypto private key. */
function keyPem(key: CryptoKey): string {
  return KeyObject.from(key).export({ type: 'pkcs8', format: 'pem' }) as string
}

/** A PEM private key as a WebCrypto ECDSA P-256 signing key. */
async function signingKey(pem: string): Promise<CryptoKey> {
  const der = createPrivateKey(pem).export({ type: 'pkcs8', format: 'der' })
  return crypto.subtle.importKey('pkcs8', der, P256, false, ['sign'])
}

/** The critical name-constraints extension with {@link DEV_CA_PERMITTED}. */
function nameConstraints(): x509.Extension {
  const subtrees = [
    ...DEV_CA_PERMITTED.dns.map((dNSName) => new GeneralName({ dNSName })),
    ...DEV_CA_PERMITTED.ip.map((iPAddress) => new GeneralName({ iPAddress })),
  ].map((base) => new GeneralSubtree({ base }))
  const value = AsnConvert.serialize(
    new NameConstraints({ permittedSubtrees: new GeneralSubtrees(subtrees) }),
  )
  return new x509.Extension(id_ce_nameConstraints, true, value)
}

/**
 * A new development CA: self-signed P-256, `cA:true` with path length 0 (it signs leaves only),
 * key usage keyCertSign/cRLSign, key identifiers, the local-names constraints, and a subject
 * with a random part so two machines' (or two tests') CAs never share a name — a client
 * trusting several of them then finds each leaf's real issuer.
 */
export async function makeDevCa(days: number): Promise<CertAndKey> {
  const keys = await newKeys()
  const now = Date.now()
  const ski = await x509.SubjectKeyIdentifierExtension.create(keys.publicKey, false, crypto)
  const cert = await x509.X509CertificateGenerator.createSelfSigned(
    {
      serialNumber: serial(),
      name: [
        { O: ['agentmsg'] },
        { CN: [`agentmsg development CA ${randomBytes(6).toString('hex')}`] },
      ],
      notBefore: new Date(now - 60_000),
      notAfter: new Date(now + days * DAY),
      keys,
      signingAlgorithm: P256,
      extensions: [
        new x509.BasicConstraintsExtension(true, 0, true),
        new x509.KeyUsagesExtension(
          x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign,
          true,
        ),
        ski,
        new x509.AuthorityKeyIdentifierExtension(ski.keyId),
        nameConstraints(),
      ],
    },
    crypto,
  )
  return { cert: `${cert.toString('pem')}\n`, key: keyPem(keys.privateKey) }
}

/** Names a leaf covers. */
export interface LeafNames {
  hosts: string[]
  ips: string[]
}

/**
 * A server leaf issued by `ca`: `cA:false`, digitalSignature, serverAuth only, the given DNS
 * and IP names as SANs, its own key identifier and the CA's as authority key identifier, a
 * random serial. The subject CN is the first DNS name (or a non-host text when there is none,
 * so OpenSSL does not check an IP-looking CN against the DNS constraints).
 */
export async function issueLeaf(
  ca: CertAndKey,
  names: LeafNames,
  days: number,
): Promise<CertAndKey> {
  const issuer = new x509.X509Certificate(ca.cert)
  const caSki = issuer.getExtension(x509.SubjectKeyIdentifierExtension)
  if (!caSki) throw new Error('the development CA certificate has no subject key identifier')
  const keys = await newKeys()
  const now = Date.now()
  const notAfter = Math.min(now + days * DAY, issuer.notAfter.getTime())
  const cert = await x509.X509CertificateGenerator.create(
    {
      serialNumber: serial(),
      subject: [{ CN: [names.hosts[0] ?? 'agentmsg development server'] }],
      issuer: issuer.subjectName,
      notBefore: new Date(now - 60_000),
      notAfter: new Date(notAfter),
      publicKey: keys.publicKey,
      signingKey: await signingKey(ca.key),
      signingAlgorithm: P256,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
        new x509.SubjectAlternativeNameExtension([
          ...names.hosts.map((value) => ({ type: 'dns' as const, value })),
          ...names.ips.map((value) => ({ type: 'ip' as const, value })),
        ]),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey, false, crypto),
        new x509.AuthorityKeyIdentifierExtension(caSki.keyId),
      ],
    },
    crypto,
  )
  return { cert: `${cert.toString('pem')}\n`, key: keyPem(keys.privateKey) }
}
