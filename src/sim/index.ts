// Simulated kube-apiserver used by tests, benchmarks and the demo as the backend of mvproxy.
// Stages: catalog (what it serves) → discovery (precomputed documents) → server (intake, routing)
// → handlers (resources) → watch (streams), over a shared ObjectStore.
export { startSimApiserver, type SimApiserver, type SimApiserverOptions } from './server';
export { ObjectStore, StoreError, cloneObject, type KubeObject, type ObjectMeta, type ObjectStoreOptions, type StoredObject, type StoreEvent, type WatchEventType } from './store';
export type { RecordedRequest, RequestIdentity } from './context';
export { buildCatalog, parseRuntimeConfig, servedKeys, fixturesDir, FIXTURE_FOLDERS, type Catalog, type ResourceInfo, type SimKubernetesVersion } from './catalog';
export { AGGREGATED_V2_CONTENT_TYPE, AGGREGATED_V2BETA1_CONTENT_TYPE, etagOf } from './discovery';
export { parseAccept, negotiateDiscovery } from './negotiate';
