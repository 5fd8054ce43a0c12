// upgrade-client is the controller of the rolling-upgrade scenario (test/kube/upgrade/scenario.ts),
// shaped like kube-controller-manager on a control-plane node (it talks to its own node's server):
// leader election on a Lease as the controller-manager runs it (15 s lease, 10 s renew deadline, 2 s
// retry, requests bounded by half the renew deadline: resourcelock.NewFromKubeconfig), client-go
// informers on a resource every release serves (ConfigMaps) and one only the newer release serves
// (certificates.k8s.io/v1 ClusterTrustBundles, GA after v1.34), plus a writer that creates, reads
// and updates objects of both, through one server (an mvproxy, or an apiserver directly). It judges
// nothing: it prints one JSON line per request, per watch opened, ended or failed, per informer
// error and per leadership change, and the scenario counts them against what it knows existed when.
//
//	{"t":<unix ms>,"ev":"req","verb":"create|get|update","res":"configmaps","obj":"...","code":200,"own":true,"ms":12,"aid":"c0-w17"}
//	{"t":<unix ms>,"ev":"watch-open","res":"configmaps","ms":3}      a watch's response head arrived
//	{"t":<unix ms>,"ev":"watch-end","res":"configmaps"}              the server ended it (client-go re-watches)
//	{"t":<unix ms>,"ev":"watch-fail","res":"configmaps","code":0,"err":"..."}
//	{"t":<unix ms>,"ev":"watch-error","res":"clustertrustbundles","code":404,"err":"..."}   the informer's error handler
//	{"t":<unix ms>,"ev":"leader","state":"started|lost"}
//
// "own": the object was created by this client earlier (so it exists). code 0: no HTTP answer
// (connection refused, the client's timeout). Every HTTP request carries an Audit-ID of its own
// ("aid", then "." and a per-process sequence number): kube-apiserver records it as the audit ID,
// so the scenario finds a request that ran twice in the audit logs. It stops on SIGTERM or after
// -duration.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
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

type auditKey struct{}

// auditIDs gives every HTTP request (each of client-go's own retries too) an Audit-ID of its own:
// the writer's name for the request from the context, else the client's name, then a sequence number.
type auditIDs struct {
	name string
	seq  *atomic.Int64
	rt   http.RoundTripper
}

func (a *auditIDs) RoundTrip(req *http.Request) (*http.Response, error) {
	base, _ := req.Context().Value(auditKey{}).(string)
	if base == "" {
		base = a.name
	}
	req = req.Clone(req.Context())
	req.Header.Set("Audit-ID", fmt.Sprintf("%s.%d", base, a.seq.Add(1)))
	return a.rt.RoundTrip(req)
}

// loggedWatch reports when the server ends a watch (its result channel closes) while the client
// still runs: the scenario measures the gap to the next watch-open of the same resource.
type loggedWatch struct {
	watch.Interface
	out chan watch.Event
}

func (w *loggedWatch) ResultChan() <-chan watch.Event { return w.out }

func logWatch(ctx context.Context, res string, w watch.Interface) watch.Interface {
	lw := &loggedWatch{Interface: w, out: make(chan watch.Event)}
	go func() {
		defer close(lw.out)
		for ev := range w.ResultChan() {
			select {
			case lw.out <- ev:
			case <-ctx.Done():
				w.Stop()
				return
			}
		}
		if ctx.Err() == nil {
			emit(map[string]any{"ev": "watch-end", "res": res})
		}
	}()
	return lw
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
	var seq atomic.Int64
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &auditIDs{name: *name, seq: &seq, rt: rt} })
	// A controller's settings, except the client-side rate limit (the scenario measures the server
	// side). The informers run without a whole-request timeout, as a controller-manager's do (an
	// http.Client timeout would cut every watch); the writer's requests give up after 5 s, so a
	// dead server is an error line within seconds.
	cfg.QPS, cfg.Burst = 1000, 1000
	informerClient := dynamic.NewForConfigOrDie(cfg)
	writerCfg := rest.CopyConfig(cfg)
	writerCfg.Timeout = 5 * time.Second
	client := dynamic.NewForConfigOrDie(writerCfg)
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

	// Leader election as kube-controller-manager runs it (its defaults; the lock's client bounded by
	// half the renew deadline). A lost lease ends a controller-manager (the kubelet starts it again):
	// here it is a line, and the election starts over. One Lease per client, so each one leads.
	lock, err := resourcelock.NewFromKubeconfig(resourcelock.LeasesResourceLock, "kube-system", "upgrade-"+*name, resourcelock.ResourceLockConfig{Identity: *name}, cfg, 10*time.Second)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	go func() {
		for ctx.Err() == nil {
			leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
				Lock:          lock,
				LeaseDuration: 15 * time.Second,
				RenewDeadline: 10 * time.Second,
				RetryPeriod:   2 * time.Second,
				Name:          "upgrade-" + *name,
				Callbacks: leaderelection.LeaderCallbacks{
					OnStartedLeading: func(context.Context) { emit(map[string]any{"ev": "leader", "state": "started"}) },
					OnStoppedLeading: func() {
						if ctx.Err() == nil {
							emit(map[string]any{"ev": "leader", "state": "lost"})
						}
					},
				},
			})
		}
	}()

	// Informers, as a controller runs them (dynamicinformer's list/watch, each watch reported); every
	// failed list or watch is a line.
	for _, k := range kinds {
		ri := informerClient.Resource(k.gvr)
		var r dynamic.ResourceInterface = ri
		if k.namespace != "" {
			r = ri.Namespace(k.namespace)
		}
		res := k.short
		lw := &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return r.List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				start := time.Now()
				w, err := r.Watch(ctx, o)
				if err != nil {
					if ctx.Err() == nil {
						emit(map[string]any{"ev": "watch-fail", "res": res, "code": code(err), "err": firstLine(err)})
					}
					return nil, err
				}
				emit(map[string]any{"ev": "watch-open", "res": res, "ms": time.Since(start).Milliseconds()})
				return logWatch(ctx, res, w), nil
			},
		}
		inf := cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, informerClient), &unstructured.Unstructured{}, cache.SharedIndexInformerOptions{})
		_ = inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
			emit(map[string]any{"ev": "watch-error", "res": res, "code": code(err), "err": firstLine(err)})
		})
		go inf.RunWithContext(ctx)
	}

	// The writer: per round and kind, create one object, read one that exists (its own, or a seed),
	// and update one of its own.
	own := map[string][]string{}
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	var round int
	send := func(verb string, res string, obj string, isOwn bool, do func(context.Context) error) error {
		round++
		aid := fmt.Sprintf("%s-w%d", *name, round)
		start := time.Now()
		err := do(context.WithValue(ctx, auditKey{}, aid))
		if ctx.Err() != nil {
			return ctx.Err()
		}
		line := map[string]any{"ev": "req", "verb": verb, "res": res, "obj": obj, "code": code(err), "own": isOwn, "ms": time.Since(start).Milliseconds(), "aid": aid}
		if code(err) == 0 {
			line["err"] = firstLine(err)
		}
		emit(line)
		return err
	}
	for i := 0; ctx.Err() == nil; i++ {
		for _, k := range kinds {
			ri := client.Resource(k.gvr)
			var r dynamic.ResourceInterface = ri
			if k.namespace != "" {
				r = ri.Namespace(k.namespace)
			}
			objName := fmt.Sprintf("%s-%d", *name, i)
			err := send("create", k.short, objName, false, func(c context.Context) error {
				_, err := r.Create(c, k.object(objName), metav1.CreateOptions{})
				return err
			})
			if ctx.Err() != nil {
				break
			}
			if err == nil {
				own[k.short] = append(own[k.short], objName)
			}
			target, isOwn := fmt.Sprintf("seed-%s-%d", shortName(k.short), rng.Intn(*seeds)), false
			if mine := own[k.short]; len(mine) > 0 && i%2 == 0 {
				target, isOwn = mine[rng.Intn(len(mine))], true
			}
			_ = send("get", k.short, target, isOwn, func(c context.Context) error {
				_, err := r.Get(c, target, metav1.GetOptions{})
				return err
			})
			if ctx.Err() != nil {
				break
			}
			if mine := own[k.short]; len(mine) > 0 {
				u := mine[rng.Intn(len(mine))]
				_ = send("update", k.short, u, true, func(c context.Context) error {
					_, err := r.Patch(c, u, types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"labels":{"round":"%d"}}}`, i)), metav1.PatchOptions{})
					return err
				})
				if ctx.Err() != nil {
					break
				}
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
