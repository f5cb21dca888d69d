import type {
  AccountStore,
  ApiKeyStore,
  GatewayStateStore,
  HistoryStore,
  KvStore,
  PrivacyStore,
  ProfileStore,
  ReadTokenStore,
  RetentionStore,
  Store,
  WebhookStore,
} from '../store/ports.js';
import type { Metrics, StoreBackend } from './metrics.js';

/** Every operation of every port, so a port or a method added to the store and not here fails to compile. */
const OPERATIONS: {
  [K in Exclude<keyof Store, 'ping' | 'close'>]: Record<keyof Store[K], true>;
} = {
  profiles: { getProfiles: true, putProfiles: true } satisfies Record<keyof ProfileStore, true>,
  kv: { getKv: true, getKvs: true, writeKv: true } satisfies Record<keyof KvStore, true>,
  apiKeys: {
    replaceKey: true,
    addPendingKey: true,
    activateKey: true,
    discardPendingKey: true,
    revokeKey: true,
    revokeKeysOf: true,
    findKey: true,
  } satisfies Record<keyof ApiKeyStore, true>,
  history: {
    appendHistory: true,
    history: true,
    latest: true,
    stats: true,
    topTracks: true,
    playDays: true,
    forget: true,
  } satisfies Record<keyof HistoryStore, true>,
  webhooks: {
    addWebhook: true,
    webhooksOf: true,
    webhook: true,
    activeWebhooks: true,
    removeWebhook: true,
    disableWebhook: true,
    recordDelivery: true,
    deliveries: true,
  } satisfies Record<keyof WebhookStore, true>,
  privacy: {
    getPrivacy: true,
    allPrivacy: true,
    patchPrivacy: true,
    deletePrivacy: true,
  } satisfies Record<keyof PrivacyStore, true>,
  readTokens: {
    addReadToken: true,
    readTokensOf: true,
    removeReadToken: true,
    findReadToken: true,
  } satisfies Record<keyof ReadTokenStore, true>,
  accounts: { erase: true, details: true } satisfies Record<keyof AccountStore, true>,
  retention: {
    seen: true,
    due: true,
    forgetSeen: true,
    adoptUnseen: true,
  } satisfies Record<keyof RetentionStore, true>,
  gatewayState: { save: true, load: true, clear: true } satisfies Record<keyof GatewayStateStore, true>,
};

type AsyncMethod = (...args: unknown[]) => Promise<unknown>;

/**
 * Times every operation of a store, whichever adapter it is, into `presently_store_operation_duration_seconds`
 * (operation `kv.getKv`, `history.appendHistory`, …, and `ping`). The methods are wrapped on the store's own
 * port objects: everything holding those objects (routes, the recorder, the bot) is timed without knowing,
 * and the store keeps its type.
 */
export function timeStore(store: Store, backend: StoreBackend, metrics: Metrics): void {
  const wrap = (target: object, method: string, operation: string): void => {
    const methods = target as Record<string, AsyncMethod>;
    const original = (methods[method] as AsyncMethod).bind(target);
    methods[method] = (...args) => {
      const started = performance.now();
      const result = original(...args);
      const done = (): void =>
        metrics.storeOperation(backend, operation, (performance.now() - started) / 1000);
      // Observed, not awaited: the caller gets the same promise, and sees its failure as before.
      result.then(done, done);
      return result;
    };
  };
  for (const [port, methods] of Object.entries(OPERATIONS) as [keyof typeof OPERATIONS, object][]) {
    for (const method of Object.keys(methods)) wrap(store[port], method, `${port}.${method}`);
  }
  wrap(store, 'ping', 'ping');
}
