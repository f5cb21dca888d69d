/**
 * Opened as a document (a browser tab showing a JSON error, say), an answer may load nothing, run nothing,
 * and be framed by no page. The card has a policy of its own that lets it show its inline images and styles
 * (CARD_CONTENT_SECURITY_POLICY).
 */
export const CONTENT_SECURITY_POLICY = "default-src 'none'; frame-ancestors 'none'";

/**
 * The policy of an HTML page this service serves (the landing page, the docs): scripts, styles, images and
 * connections from this service only, nothing inline, and no framing. `formAction`: where its forms may
 * submit ('none' for a page without forms of its own). `images`: where else its images may come from.
 */
export function pageContentSecurityPolicy(
  formAction: "'self'" | "'none'",
  images: readonly string[] = [],
): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    `img-src ${[...new Set(["'self'", 'data:', ...images])].join(' ')}`,
    "connect-src 'self'",
    "base-uri 'none'",
    `form-action ${formAction}`,
    "frame-ancestors 'none'",
  ].join('; ');
}

/**
 * What every answer carries, whoever writes it: Fastify (a hook in server.ts), the fast read path
 * (fast-read.ts), and the answers written straight to a socket for requests that reach no route
 * (errors.ts) or upgrades that do not become sockets (socket/admission.ts). `nosniff`: an answer is what
 * its Content-Type says, and no browser may guess otherwise.
 */
export const SECURITY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'content-security-policy': CONTENT_SECURITY_POLICY,
} as const;

/** SECURITY_HEADERS as header lines, for answers written to the socket by hand. */
export const SECURITY_HEADER_LINES = Object.entries(SECURITY_HEADERS)
  .map(([name, value]) => `${name}: ${value}\r\n`)
  .join('');
