import type { ChainableCommander } from 'ioredis';

/** The replies of a MULTI or a pipeline, throwing the first error instead of handing it back as a value. */
export async function execAll(multi: ChainableCommander): Promise<unknown[]> {
  const replies = (await multi.exec()) ?? [];
  return replies.map(([error, reply]) => {
    if (error) throw error;
    return reply;
  });
}
