import { createHmac, randomBytes } from 'node:crypto';

/** A webhook's secret: `whsec_` and 43 base64url characters (256 random bits). */
export const WEBHOOK_SECRET_PREFIX = 'whsec_';

export function generateSecret(): string {
  return WEBHOOK_SECRET_PREFIX + randomBytes(32).toString('base64url');
}

/**
 * `Presently-Signature` of a body sent at `seconds` (Unix time): `t=<seconds>,v1=<hex HMAC-SHA256>` of
 * `<seconds>.<body>`, keyed with the secret as it was handed out. The time is signed with the body, so a
 * receiver that rejects old times cannot be replayed old deliveries.
 */
export function signature(secret: string, body: string, seconds: number): string {
  const digest = createHmac('sha256', secret).update(`${seconds}.${body}`).digest('hex');
  return `t=${seconds},v1=${digest}`;
}
