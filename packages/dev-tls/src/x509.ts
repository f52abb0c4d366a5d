/**
 * The development certificates as X.509 (`@peculiar/x509` over Node's WebCrypto): a CA limited
 * by name constraints to local names, and the server leaves it issues.
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
export type CertAndKey = { cert: string; key: string }

// What the CA may certify (RFC 5280 §4.2.1.10 name constraints, which OpenSSL enforces while
// building the chain): localhost, the RFC 6761 `.test` domain, loopback. A leaked CA key
// therefore cannot mint a certificate that clients accept for `bank.example`.
const PERMITTED = { dns: ['localhost', 'test'], ip: ['127.0.0.0/8', '::1/128'] }

/** Whether a leaf for `name` would pass the development CA's name constraints. */
export function permittedName(name: string): boolean {
  const version = isIP(name)
  if (version === 4) return name.startsWith('127.')
  if (version === 6) return name === '::1' || name === '0:0:0:0:0:0:0:1'
  const lower = name.toLowerCase().replace(/\.$/, '')
  return PERMITTED.dns.some((base) => lower === base || lower.endsWith(`.${base}`))
}

/** What every certificate here has: a random serial (RFC 5280 §4.1.2.2), a P-256 key pair. */
async function basics(days: number, notAfterMax = Infinity) {
  const serial = randomBytes(16)
  serial[0] = 0x40 | (serial[0]! & 0x3f) // positive, no leading zero byte
  const keys = (await crypto.subtle.generateKey(P256, true, ['sign', 'verify'])) as CryptoKeyPair
  const now = Date.now()
  const ski = await x509.SubjectKeyIdentifierExtension.create(keys.publicKey, false, crypto)
  return {
    keys,
    ski,
    fields: {
      serialNumber: serial.toString('hex'),
      notBefore: new Date(now - 60_000),
      notAfter: new Date(Math.min(now + days * DAY, notAfterMax)),
      signingAlgorithm: P256,
    },
  }
}

function pem(cert: x509.X509Certificate, keys: CryptoKeyPair): CertAndKey {
  const key = KeyObject.from(keys.privateKey).export({ type: 'pkcs8', format: 'pem' }) as string
  return { cert: `${cert.toString('pem')}\n`, key }
}

/**
 * A new development CA: self-signed P-256, `cA:true` with path length 0 (it signs leaves only),
 * key usage keyCertSign/cRLSign, key identifiers, the local-names constraints, and a subject
 * with a random part so two machines' (or two tests') CAs never share a name — a client
 * trusting several of them then finds each leaf's real issuer.
 */
export async function makeDevCa(days: number): Promise<CertAndKey> {
  const { keys, ski, fields } = await basics(days)
  const subtrees = [
    ...PERMITTED.dns.map((dNSName) => new GeneralName({ dNSName })),
    ...PERMITTED.ip.map((iPAddress) => new GeneralName({ iPAddress })),
  ].map((base) => new GeneralSubtree({ base }))
  const constraints = AsnConvert.serialize(
    new NameConstraints({ permittedSubtrees: new GeneralSubtrees(subtrees) }),
  )
  const cert = await x509.X509CertificateGenerator.createSelfSigned(
    {
      ...fields,
      name: [
        { O: ['agentmsg'] },
        { CN: [`agentmsg development CA ${randomBytes(6).toString('hex')}`] },
      ],
      keys,
      extensions: [
        new x509.BasicConstraintsExtension(true, 0, true),
        new x509.KeyUsagesExtension(
          x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign,
          true,
        ),
        ski,
        new x509.AuthorityKeyIdentifierExtension(ski.keyId),
        new x509.Extension(id_ce_nameConstraints, true, constraints),
      ],
    },
    crypto,
  )
  return pem(cert, keys)
}

/**
 * A server leaf issued by `ca`: `cA:false`, digitalSignature, serverAuth only, the given DNS
 * and IP names as SANs, key identifiers. The subject CN is the first DNS name (or a non-host
 * text when there is none, so OpenSSL does not check an IP-looking CN against the DNS
 * constraints). It ends no later than the CA.
 */
export async function issueLeaf(
  ca: CertAndKey,
  names: { hosts: string[]; ips: string[] },
  days: number,
): Promise<CertAndKey> {
  const issuer = new x509.X509Certificate(ca.cert)
  const caSki = issuer.getExtension(x509.SubjectKeyIdentifierExtension)
  if (!caSki) throw new Error('the development CA certificate has no subject key identifier')
  const { keys, ski, fields } = await basics(days, issuer.notAfter.getTime())
  const der = createPrivateKey(ca.key).export({ type: 'pkcs8', format: 'der' })
  const cert = await x509.X509CertificateGenerator.create(
    {
      ...fields,
      subject: [{ CN: [names.hosts[0] ?? 'agentmsg development server'] }],
      issuer: issuer.subjectName,
      publicKey: keys.publicKey,
      signingKey: await crypto.subtle.importKey('pkcs8', der, P256, false, ['sign']),
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
        new x509.SubjectAlternativeNameExtension([
          ...names.hosts.map((value) => ({ type: 'dns' as const, value })),
          ...names.ips.map((value) => ({ type: 'ip' as const, value })),
        ]),
        ski,
        new x509.AuthorityKeyIdentifierExtension(caSki.keyId),
      ],
    },
    crypto,
  )
  return pem(cert, keys)
}
