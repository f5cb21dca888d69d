import { type Agent, type OutgoingHttpHeaders, request } from 'node:http';

export interface LoopbackRequest {
  method: string;
  path: string;
  /** The loopback address the request comes from: Linux answers on all of 127.0.0.0/8. */
  localAddress: string;
  headers?: OutgoingHttpHeaders;
  body?: Buffer | string;
  agent?: Agent;
  /** Keep the answer's body (otherwise it is read and dropped). */
  keepBody?: boolean;
}

export interface LoopbackAnswer {
  status: number;
  body: Buffer;
}

/**
 * One request to the service from a chosen client address, which fetch cannot choose: the service counts
 * its limits per address, and a bench plays several clients.
 */
export function loopbackRequest(base: URL, options: LoopbackRequest): Promise<LoopbackAnswer> {
  const { method, path, localAddress, headers = {}, body, agent, keepBody = false } = options;
  return new Promise((resolve, reject) => {
    const outgoing = request(
      {
        host: base.hostname,
        port: base.port,
        method,
        path,
        headers,
        localAddress,
        ...(agent ? { agent } : {}),
      },
      (response) => {
        const chunks: Buffer[] = [];
        if (keepBody) response.on('data', (chunk: Buffer) => chunks.push(chunk));
        else response.resume();
        response.once('end', () =>
          resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks) }),
        );
        response.once('error', reject);
      },
    );
    outgoing.once('error', reject);
    outgoing.end(body);
  });
}
