/**
 * The headers of an answer a client can tell apart from another's: the ones that vary per response or per
 * connection go, so two paths that answer alike compare equal.
 */
export function comparableHeaders(response: Response): Record<string, string> {
  const varying = ['date', 'connection', 'keep-alive', 'content-length'];
  return Object.fromEntries([...response.headers].filter(([name]) => !varying.includes(name)));
}
