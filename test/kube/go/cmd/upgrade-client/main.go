// upgrade-client is the controller of the rolling-upgrade scenario (test/kube/upgrade/scenario.ts):
// client-go informers on a resource every release serves (ConfigMaps) and one only the newer
// release serves (certificates.k8s.io/v1 ClusterTrustBundles, GA after v1.34), plus a writer that
// creates, reads and updates objects of both, through one server (an mvproxy, or an apiserver
// directly). It judges nothing: it prints one JSON line per request and per watch error, and the
// scenario counts them against what it knows existed when.
//
//	{"t":<unix ms>,"ev":"req","verb":"create|get|update","res":"configmaps","obj":"...","code":200,"own":true}
//	{"t":<unix ms>,"ev":"watch-error","res":"clustertrustbundles","code":404,"err":"..."}
//
// "own": the object was created by this client earlier (so it exists). code 0: no HTTP answer
// (connection refused, timeout). It stops on SIGTERM or after -duration.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

var (
	mu  sync.Mutex
	enc = json.NewEncoder(os.Stdout)
)

func emit(v map[string]any) {
	v["t"] = time.Now().UnixMilli()
	mu.Lock()
	defer mu.Unlock()
	_ = enc.Encode(v)
}

// code is the HTTP status of err, 0 when there was no HTTP answer.
func code(err error) int {
	if err == nil {
		return 200
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		return int(st.Status().Code)
	}
	return 0
}

type kind struct {
	short     string
	gvr       schema.GroupVersionResource
	namespace string
	object    func(name string) *unstructured.Unstructured
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig")
	server := flag.String("server", "", "overrides the kubeconfig's server")
	name := flag.String("name", "client", "this client's name (object name prefix)")
	namespace := flag.String("namespace", "upgrade", "namespace of the ConfigMaps")
	caFile := flag.String("trust-bundle", "", "PEM file: the ClusterTrustBundles' spec.trustBundle")
	interval := flag.Duration("interval", 100*time.Millisecond, "pause between writer rounds")
	seeds := flag.Int("seeds", 3, "seed-<res>-<k> objects the scenario creates, k < seeds, read too")
	duration := flag.Duration("duration", 10*time.Minute, "stop after this long")
	flag.Parse()

	overrides := &clientcmd.ConfigOverrides{}
	overrides.ClusterInfo.Server = *server
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(&clientcmd.ClientConfigLoadingRules{ExplicitPath: *kubeconfig}, overrides).ClientConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	// A controller's settings, except the client-side rate limit (the scenario measures the server
	// side) and a request timeout that turns a dead server into an error line within seconds.
	cfg.QPS, cfg.Burst = 1000, 1000
	cfg.Timeout = 5 * time.Second
	client := dynamic.NewForConfigOrDie(cfg)
	bundle, err := os.ReadFile(*caFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}

	kinds := []kind{
		{short: "configmaps", gvr: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, namespace: *namespace, object: func(n string) *unstructured.Unstructured {
			return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": n, "namespace": *namespace}, "data": map[string]any{"by": *name}}}
		}},
		{short: "clustertrustbundles", gvr: schema.GroupVersionResource{Group: "certificates.k8s.io", Version: "v1", Resource: "clustertrustbundles"}, object: func(n string) *unstructured.Unstructured {
			return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "certificates.k8s.io/v1", "kind": "ClusterTrustBundle", "metadata": map[string]any{"name": n}, "spec": map[string]any{"trustBundle": string(bundle)}}}
		}},
	}

	ctx, cancel := context.WithTimeout(context.Background(), *duration)
	defer cancel()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sig
		cancel()
	}()

	// Informers, as a controller runs them; every failed list or watch is a line.
	for _, k := range kinds {
		factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(client, 0, k.namespace, nil)
		inf := factory.ForResource(k.gvr).Informer()
		res := k.short
		_ = inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
			emit(map[string]any{"ev": "watch-error", "res": res, "code": code(err), "err": firstLine(err)})
		})
		go inf.RunWithContext(ctx)
	}

	// The writer: per round and kind, create one object, read one that exists (its own, or a seed),
	// and update one of its own.
	own := map[string][]string{}
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	for i := 0; ctx.Err() == nil; i++ {
		for _, k := range kinds {
			ri := client.Resource(k.gvr)
			var r dynamic.ResourceInterface = ri
			if k.namespace != "" {
				r = ri.Namespace(k.namespace)
			}
			objName := fmt.Sprintf("%s-%d", *name, i)
			_, err := r.Create(ctx, k.object(objName), metav1.CreateOptions{})
			if ctx.Err() != nil {
				break
			}
			emit(map[string]any{"ev": "req", "verb": "create", "res": k.short, "obj": objName, "code": code(err), "own": false})
			if err == nil {
				own[k.short] = append(own[k.short], objName)
			}
			target, isOwn := fmt.Sprintf("seed-%s-%d", shortName(k.short), rng.Intn(*seeds)), false
			if mine := own[k.short]; len(mine) > 0 && i%2 == 0 {
				target, isOwn = mine[rng.Intn(len(mine))], true
			}
			_, err = r.Get(ctx, target, metav1.GetOptions{})
			if ctx.Err() != nil {
				break
			}
			emit(map[string]any{"ev": "req", "verb": "get", "res": k.short, "obj": target, "code": code(err), "own": isOwn})
			if mine := own[k.short]; len(mine) > 0 {
				u := mine[rng.Intn(len(mine))]
				_, err = r.Patch(ctx, u, types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"labels":{"round":"%d"}}}`, i)), metav1.PatchOptions{})
				if ctx.Err() != nil {
					break
				}
				emit(map[string]any{"ev": "req", "verb": "update", "res": k.short, "obj": u, "code": code(err), "own": true})
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(*interval):
		}
	}
	emit(map[string]any{"ev": "done"})
}

func shortName(res string) string {
	if res == "configmaps" {
		return "cm"
	}
	return "ctb"
}

func firstLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}
