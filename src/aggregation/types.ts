// apidiscovery.k8s.io/v2 wire types (k8s.io/api/apidiscovery/v2/types.go; docs/kubernetes-mvp.md §7.1).
// v2beta1 has the identical shape. Field names and optionality follow the Go JSON tags:
// `verbs` has no omitempty (null when empty), the rest of the slices are omitempty.

export interface GroupVersionKind {
  group: string;
  version: string;
  kind: string;
}

export interface APISubresourceDiscovery {
  subresource: string;
  responseKind?: GroupVersionKind;
  acceptedTypes?: GroupVersionKind[];
  verbs: string[] | null;
}

export interface APIResourceDiscovery {
  resource: string;
  responseKind?: GroupVersionKind;
  scope: 'Cluster' | 'Namespaced' | string;
  singularResource: string;
  verbs: string[] | null;
  shortNames?: string[];
  categories?: string[];
  subresources?: APISubresourceDiscovery[];
}

export type DiscoveryFreshness = 'Current' | 'Stale' | string;

export interface APIVersionDiscovery {
  version: string;
  resources?: APIResourceDiscovery[];
  freshness?: DiscoveryFreshness;
}

export interface ObjectMeta {
  name?: string;
  [key: string]: unknown;
}

export interface APIGroupDiscovery {
  metadata: ObjectMeta;
  versions?: APIVersionDiscovery[];
}

export interface APIGroupDiscoveryList {
  kind: 'APIGroupDiscoveryList' | string;
  apiVersion: 'apidiscovery.k8s.io/v2' | 'apidiscovery.k8s.io/v2beta1' | string;
  metadata: Record<string, unknown>;
  items: APIGroupDiscovery[];
}

export const APIDISCOVERY_GROUP = 'apidiscovery.k8s.io';
export const APIGROUP_DISCOVERY_LIST_KIND = 'APIGroupDiscoveryList';
