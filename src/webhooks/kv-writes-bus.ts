import type { Bus, BusMessages } from '../bus/ports.js';

/**
 * The bus as the KV service publishes on it, reporting to `written` every change written on this node once
 * it is published: each write is heard once across the deployment, where every node hears the bus.
 */
export function busReportingKvWrites(bus: Bus, written: (change: BusMessages['kv.changed']) => void): Bus {
  return {
    async publish(topic, message) {
      await bus.publish(topic, message);
      if (topic === 'kv.changed') written(message as BusMessages['kv.changed']);
    },
    subscribe: (topic, handler) => bus.subscribe(topic, handler),
    close: () => bus.close(),
  };
}
