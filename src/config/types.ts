// The resolved configuration the rest of mvproxy reads (flags and --config merged, checked): its
// type and its defaults, both derived from the settings table (config/settings.ts), where each
// field's flag, file field, default, help and check are declared.

import { SETTINGS, type KindValue, type SETTING_TABLE } from './settings';

type Table = typeof SETTING_TABLE;
type ValueOf<K extends keyof Table> = KindValue<Table[K]['kind']>;
/** A setting with a default (a value or one computed at start) is always set. */
type HasDefault<K extends keyof Table> = Table[K] extends { default: unknown } | { defaultFrom: unknown } ? K : never;
type WithDefault = { [K in keyof Table]: HasDefault<K> }[keyof Table];
type Flatten<T> = { [K in keyof T]: T[K] };

export type DaemonConfig = Flatten<{ [K in WithDefault]: ValueOf<K> } & { [K in Exclude<keyof Table, WithDefault>]?: ValueOf<K> }>;

/** --frontend: auto picks uWS when it loads and can serve the configuration (listener/frontend.ts). */
export type FrontendSetting = DaemonConfig['frontend'];
/** The front end that serves the client listener. */
export type Frontend = Exclude<FrontendSetting, 'auto'>;
/** How peers are found: a list given by the operator, or Kubernetes Leases through the local apiserver. */
export type PeerDiscoveryMode = DaemonConfig['peerDiscovery'];

type DefaultKey = { [K in keyof Table]: Table[K] extends { default: unknown } ? K : never }[keyof Table];

/** Every default that is a value (not computed at start, like serverID), from the table. */
export const DEFAULTS = Object.fromEntries(SETTINGS.filter((s) => s.default !== undefined).map((s) => [s.key, s.default])) as { [K in DefaultKey]: ValueOf<K> };
