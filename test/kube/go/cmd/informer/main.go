// informer runs a client-go dynamic informer on one group/version/resource through the server of a
// kubeconfig (an mvproxy in the suite) and prints one JSON line per event, so the suite sees what a
// controller sees: {"type":"ADD|UPDATE|DELETE","name":...,"rv":...} and {"type":"SYNCED"} once the
// initial list is in. It exits after -duration or on SIGTERM; errors from the watch (which client-go
// retries) are printed as {"type":"ERROR","error":...}.
//
// It also prints {"type":"LIST"} each time the reflector lists. client-go (WatchListClient, on by
// default since 1.35) fills an informer with a watch-list (a watch with sendInitialEvents) and lists
// only when that fails, silently (a V(4) log line): a LIST line is how a broken watch-list shows. A
// watch-list mvproxy corrupted (issue 33: one byte before a gzip body) fell back to LIST and WATCH
// without a single error line, which is how the suite missed it.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

var mu sync.Mutex

func emit(v map[string]any) {
	b, _ := json.Marshal(v)
	mu.Lock()
	defer mu.Unlock()
	fmt.Println(string(b))
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig")
	server := flag.String("server", "", "overrides the kubeconfig's server")
	group := flag.String("group", "", "API group")
	version := flag.String("version", "v1", "API version")
	resource := flag.String("resource", "", "resource (plural)")
	namespace := flag.String("namespace", "", "namespace (empty: all)")
	duration := flag.Duration("duration", 2*time.Minute, "exit after this long")
	flag.Parse()

	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: *kubeconfig}
	overrides := &clientcmd.ConfigOverrides{}
	if *server != "" {
		overrides.ClusterInfo.Server = *server
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		emit(map[string]any{"type": "FATAL", "error": err.Error()})
		os.Exit(2)
	}
	cfg.WarningHandler = nil
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		emit(map[string]any{"type": "FATAL", "error": err.Error()})
		os.Exit(2)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, *duration)
	defer cancelT()

	gvr := schema.GroupVersionResource{Group: *group, Version: *version, Resource: *resource}
	// The dynamic informer tweaks the options of every list and watch it makes; a watch (watch-list or
	// plain) always asks for bookmarks, a list never does.
	tweak := func(o *metav1.ListOptions) {
		if !o.AllowWatchBookmarks {
			emit(map[string]any{"type": "LIST"})
		}
	}
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(client, 0, *namespace, tweak)
	inf := factory.ForResource(gvr).Informer()
	_ = inf.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
		emit(map[string]any{"type": "ERROR", "error": err.Error()})
	})
	obj := func(o any) map[string]any {
		if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
			o = t.Obj
		}
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			return map[string]any{}
		}
		return map[string]any{"name": u.GetName(), "namespace": u.GetNamespace(), "rv": u.GetResourceVersion()}
	}
	with := func(t string, o any) map[string]any {
		m := obj(o)
		m["type"] = t
		return m
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { emit(with("ADD", o)) },
		UpdateFunc: func(_, o any) { emit(with("UPDATE", o)) },
		DeleteFunc: func(o any) { emit(with("DELETE", o)) },
	})
	factory.Start(ctx.Done())
	if cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		emit(map[string]any{"type": "SYNCED"})
	}
	<-ctx.Done()
	factory.Shutdown()
}
