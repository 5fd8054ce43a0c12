// The discovery protobuf schema: the three .proto texts live here and only here (embedded, so they
// need no file at run time, from src/ under tsx and from dist/ alike). The hand-written codec
// (../codec/protobuf.ts) follows these field numbers; the protobufjs reflection root built here is
// the independent cross-check used by the tests, and is available to tools.
import { Root, parse } from "protobufjs";

export const APIDISCOVERY_PROTO = `// apidiscovery.k8s.io/v2 aggregated discovery, hand-written for mvproxy from the field numbers of
// k8s.io/api apidiscovery/v2/generated.proto (docs/kubernetes-mvp.md §7.2). v2beta1 (package
// k8s.io.api.apidiscovery.v2beta1) is field-for-field identical: schema.ts builds it from this
// text by changing the package line.
syntax = "proto2";

package k8s.io.api.apidiscovery.v2;

import "meta.proto";

message APIGroupDiscoveryList {
  optional k8s.io.apimachinery.pkg.apis.meta.v1.ListMeta metadata = 1;
  repeated APIGroupDiscovery items = 2;
}

message APIGroupDiscovery {
  optional k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta metadata = 1;
  repeated APIVersionDiscovery versions = 2;
}

message APIVersionDiscovery {
  optional string version = 1;
  repeated APIResourceDiscovery resources = 2;
  optional string freshness = 3;
}

message APIResourceDiscovery {
  optional string resource = 1;
  optional k8s.io.apimachinery.pkg.apis.meta.v1.GroupVersionKind responseKind = 2;
  optional string scope = 3;
  optional string singularResource = 4;
  repeated string verbs = 5;
  repeated string shortNames = 6;
  repeated string categories = 7;
  repeated APISubresourceDiscovery subresources = 8;
}

message APISubresourceDiscovery {
  optional string subresource = 1;
  optional k8s.io.apimachinery.pkg.apis.meta.v1.GroupVersionKind responseKind = 2;
  repeated k8s.io.apimachinery.pkg.apis.meta.v1.GroupVersionKind acceptedTypes = 3;
  repeated string verbs = 4;
}
`;

export const META_PROTO = `// The subset of k8s.io/apimachinery pkg/apis/meta/v1/generated.proto that discovery documents
// use, hand-written for mvproxy (field numbers from the upstream file; docs/kubernetes-mvp.md §7.2). ObjectMeta is
// complete (the round-trip fixtures fill every field); removed field 15 (clusterName) and any
// field added later are unknown here and skipped by decoders. Keep equal to META_PROTO in
// schema.ts.
syntax = "proto2";

package k8s.io.apimachinery.pkg.apis.meta.v1;

message GroupVersionKind {
  optional string group = 1;
  optional string version = 2;
  optional string kind = 3;
}

message ListMeta {
  optional string selfLink = 1;
  optional string resourceVersion = 2;
  optional string continue = 3;
  optional int64 remainingItemCount = 4;
}

// Time and Timestamp share one encoding (Go: +protobuf.as=Timestamp).
message Time {
  optional int64 seconds = 1;
  optional int32 nanos = 2;
}

message ObjectMeta {
  optional string name = 1;
  optional string generateName = 2;
  optional string namespace = 3;
  optional string selfLink = 4;
  optional string uid = 5;
  optional string resourceVersion = 6;
  optional int64 generation = 7;
  optional Time creationTimestamp = 8;
  optional Time deletionTimestamp = 9;
  optional int64 deletionGracePeriodSeconds = 10;
  map<string, string> labels = 11;
  map<string, string> annotations = 12;
  repeated OwnerReference ownerReferences = 13;
  repeated string finalizers = 14;
  repeated ManagedFieldsEntry managedFields = 17;
}

message OwnerReference {
  optional string kind = 1;
  optional string name = 3;
  optional string uid = 4;
  optional string apiVersion = 5;
  optional bool controller = 6;
  optional bool blockOwnerDeletion = 7;
}

message ManagedFieldsEntry {
  optional string manager = 1;
  optional string operation = 2;
  optional string apiVersion = 3;
  optional Time time = 4;
  optional string fieldsType = 6;
  optional FieldsV1 fieldsV1 = 7;
  optional string subresource = 8;
}

// The JSON text of the field set.
message FieldsV1 {
  optional bytes Raw = 1;
}
`;

export const RUNTIME_PROTO = `// The protobuf envelope of k8s.io/apimachinery pkg/runtime/generated.proto, hand-written for
// mvproxy (docs/kubernetes-mvp.md §7.2). A body is the 4 bytes "k8s" 0x00 followed by one Unknown. Note that
// runtime.TypeMeta numbers apiVersion 1 and kind 2 (meta.v1.TypeMeta has them the other way
// round). Keep equal to RUNTIME_PROTO in schema.ts.
syntax = "proto2";

package k8s.io.apimachinery.pkg.runtime;

message TypeMeta {
  optional string apiVersion = 1;
  optional string kind = 2;
}

message Unknown {
  optional TypeMeta typeMeta = 1;
  optional bytes raw = 2;
  optional string contentEncoding = 3;
  optional string contentType = 4;
}
`;

export const APIDISCOVERY_V2_PACKAGE = "k8s.io.api.apidiscovery.v2";
export const APIDISCOVERY_V2BETA1_PACKAGE = "k8s.io.api.apidiscovery.v2beta1";
export const META_V1_PACKAGE = "k8s.io.apimachinery.pkg.apis.meta.v1";
export const RUNTIME_PACKAGE = "k8s.io.apimachinery.pkg.runtime";

let root: Root | undefined;

/**
 * A protobufjs Root holding runtime.Unknown, the meta.v1 subset and the apidiscovery messages in
 * both packages (v2beta1 is v2 with the package renamed, as upstream). Built once, on first use.
 */
export function discoveryProtoRoot(): Root {
  if (root === undefined) {
    const r = new Root();
    parse(RUNTIME_PROTO, r, { keepCase: true });
    parse(META_PROTO, r, { keepCase: true });
    parse(APIDISCOVERY_PROTO, r, { keepCase: true });
    parse(
      APIDISCOVERY_PROTO.replace("package " + APIDISCOVERY_V2_PACKAGE + ";", "package " + APIDISCOVERY_V2BETA1_PACKAGE + ";"),
      r,
      { keepCase: true },
    );
    r.resolveAll();
    root = r;
  }
  return root;
}
