/** What stands for a URL's password wherever the URL is shown. */
export const REDACTED = '***';

const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;

/**
 * A URL fit for a message or a log line: the password of its userinfo masked
 * (`redis://user:***@host:6379/0`), and a userinfo without one masked whole, since that may be a token.
 * A value that does not parse as a URL (a mistyped setting, what a configuration error shows) is masked up
 * to its last `@`, as a password with an unencoded `/` in it would otherwise show.
 */
export function redactUrl(value: string): string {
  const start = SCHEME.exec(value)?.[0].length ?? 0;
  let end = value.length;
  if (URL.canParse(value)) {
    const authority = value.slice(start).search(/[/?#]/);
    if (authority >= 0) end = start + authority;
  }
  const at = value.lastIndexOf('@', end - 1);
  if (at <= start) return value;
  const colon = value.indexOf(':', start);
  const user = colon >= 0 && colon < at ? value.slice(start, colon + 1) : '';
  return `${value.slice(0, start)}${user}${REDACTED}${value.slice(at)}`;
}

/** A query parameter whose value is a secret: a read token given in a URL (`?token=prt_…`). */
const SECRET_PARAMETER = /([?&;]token=)[^&#;]*/gi;
/** A key or read token wherever it stands in the text, a parameter of another name included. */
const SECRET_SHAPE = /\b(pr[st]_)[A-Za-z0-9_-]+/g;

/** A request's URL (or path and query) fit for a log line: the tokens and keys it carries masked. */
export function redactUrlSecrets(url: string): string {
  return url.replace(SECRET_PARAMETER, `$1${REDACTED}`).replace(SECRET_SHAPE, `$1${REDACTED}`);
}
