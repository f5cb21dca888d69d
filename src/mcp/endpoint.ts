/** Where an instance serves agents, over HTTP. */
export const AGENT_PATH = '/mcp';

/**
 * The MCP endpoint of the instance at `base` (`https://host`, or one served under a path): a TypeError for
 * anything but an http or https URL.
 */
export function mcpEndpointOf(base: string): URL {
  const url = new URL(base);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new TypeError(`${base} is not an http:// or https:// URL`);
  }
  url.pathname = `${url.pathname.replace(/\/+$/, '')}${AGENT_PATH}`;
  url.search = '';
  url.hash = '';
  return url;
}
