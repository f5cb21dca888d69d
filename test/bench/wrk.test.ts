import { describe, expect, it } from 'vitest';
import { parseWrk } from '../../bench/lib/wrk.js';

const report = (extra: string) => `Running 4s test @ http://127.0.0.1:40000/v1/users/1
  2 threads and 100 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     3.21ms    2.10ms  41.00ms   90.00%
    Req/Sec    15.10k     1.20k   18.00k    70.00%
  Latency Distribution
     50%    2.90ms
     75%    3.50ms
     90%    4.80ms
     99%   12.40ms
  120400 requests in 4.00s, 230.10MB read
${extra}Requests/sec:  30100.00
Transfer/sec:     57.52MB
`;

describe("reading wrk's report", () => {
  it('takes the rate, the count and the latency quantiles', () => {
    const result = parseWrk(report(''));
    expect(result).toMatchObject({
      requests: 120_400,
      seconds: 4,
      requestsPerSecond: 30_100,
      p50Ms: 2.9,
      p99Ms: 12.4,
    });
    expect(result.errors).toBe(0);
  });

  it('counts non-2xx answers and every kind of socket error, and says which they were', () => {
    const result = parseWrk(
      report('  Socket errors: connect 0, read 3, write 1, timeout 40\n  Non-2xx or 3xx responses: 2\n'),
    );
    expect(result.errors).toBe(46);
    expect(result.errorKinds).toBe('non-2xx 2, connect 0, read 3, write 1, timeout 40');
  });
});
