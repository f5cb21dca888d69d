/**
 * Where people add the bot. To a server: the `bot` scope for presences and `applications.commands` for
 * `/presently`, with no permissions, since it never acts in a channel. To themselves (a user install):
 * `applications.commands` alone, so `/presently` works wherever they are.
 * https://discord.com/developers/docs/topics/oauth2#bot-authorization-flow
 */
export interface InstallLinks {
  server: string;
  user: string;
}

export function installLinks(applicationId: string): InstallLinks {
  const base = `https://discord.com/oauth2/authorize?client_id=${encodeURIComponent(applicationId)}`;
  return {
    server: `${base}&scope=bot+applications.commands&permissions=0&integration_type=0`,
    user: `${base}&scope=applications.commands&integration_type=1`,
  };
}
