// The yaml package, loaded when a file is read (the configuration file, the static peers file): most
// daemons read none, and loaded it is ~2 MiB of an idle daemon's memory (72 modules; bench/README,
// "Memory at rest").
import type * as Yaml from 'yaml';

let loaded: typeof Yaml | undefined;

export function yaml(): typeof Yaml {
  return (loaded ??= require('yaml') as typeof Yaml);
}
