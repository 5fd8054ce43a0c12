// watchload is the watch client of `npm run test:scale` (bench/scale.ts): W watches of one object's
// kind in one process, sharing one client-go clientset and so one transport, as the controllers of
// a controller-manager share theirs. client-go at its defaults (HTTP/2 when the server offers it by
// ALPN, gzip asked for by Go's transport, each watch a watch-list as informers open them since 1.35)
// but for the QPS limiter (5/s would open 2,000 watches in 400 s; controller-manager raises it too).
//
// -client typed watches with the clientset (protobuf for built-in kinds, as kubelet and the built-in
// controllers), -client dynamic with the dynamic client (JSON, as informers of custom resources).
// It creates the object if missing (-kind configmaps: a ConfigMap in -namespace; clustertrustbundles:
// a ClusterTrustBundle of -bundle-file), opens the watches (field selector on the object's name),
// and prints JSON lines:
//
//	{"phase":"established",...}  every watch got its initial-events-end bookmark
//	{"phase":"delivered",...}    after the updates: events per watch, delivery latency percentiles
//	{"phase":"fatal",...}        a watch could not be opened, or the object not made
//
// The caller writes "update\n" on stdin to start -updates patches of the object, -interval apart,
// each carrying its sequence number and the wall-clock time it was sent in annotations; a watcher
// counts each sequence number once and takes its delivery latency from that time (same machine, same
// clock). EOF on stdin, "exit\n" or SIGTERM ends the process at once, as a controller that restarts
// goes away: the kernel closes its connections, no watch is stopped first.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

const (
	seqKey = "scale.mvproxy.test/seq"
	tsKey  = "scale.mvproxy.test/sent-unix-nano"
)

var outMu sync.Mutex

func emit(v map[string]any) {
	b, _ := json.Marshal(v)
	outMu.Lock()
	defer outMu.Unlock()
	fmt.Println(string(b))
}

func fatal(err error) {
	emit(map[string]any{"phase": "fatal", "error": err.Error()})
	os.Exit(2)
}

// watcher is one watch's bookkeeping, written by its own goroutine only (read under mu at the end).
type watcher struct {
	mu          sync.Mutex
	seen        []bool
	count       int
	latenciesUs []int32
	closedEarly bool
	lastErr     string
}

func config(kubeconfig, server string, protos *sync.Map) *rest.Config {
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig}
	overrides := &clientcmd.ConfigOverrides{}
	if server != "" {
		overrides.ClusterInfo.Server = server
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		fatal(err)
	}
	// The one setting changed: client-go's QPS limiter (5/s, burst 10) applies to watches too.
	cfg.QPS = -1
	cfg.WarningHandler = rest.NoWarnings{}
	if protos != nil {
		// Which protocol the watches came over, without changing the transport.
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				resp, err := rt.RoundTrip(r)
				if err == nil {
					protos.Store(resp.Proto, true)
				}
				return resp, err
			})
		})
	}
	return cfg
}

type kind struct {
	ensure func(ctx context.Context) error
	watch  func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error)
	patch  func(ctx context.Context, body []byte) error
}

// dynamicWatch is the watch of a dynamic client (JSON, as informers of custom resources and the
// generic ones of the garbage collector and quota controllers read), instead of the typed clientset's
// (protobuf for built-in kinds).
func dynamicWatch(dc *dynamic.DynamicClient, gvr schema.GroupVersionResource, namespace string) func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	if namespace == "" {
		return func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return dc.Resource(gvr).Watch(ctx, o)
		}
	}
	return func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return dc.Resource(gvr).Namespace(namespace).Watch(ctx, o)
	}
}

func kindOf(name, namespace, object, bundleFile string, watchCS, updateCS *kubernetes.Clientset, dc *dynamic.DynamicClient) kind {
	switch name {
	case "configmaps":
		return kind{
			ensure: func(ctx context.Context) error {
				_, err := updateCS.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
				if err != nil && !apierrors.IsAlreadyExists(err) {
					return err
				}
				_, err = updateCS.CoreV1().ConfigMaps(namespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: object}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
				if err != nil && !apierrors.IsAlreadyExists(err) {
					return err
				}
				return nil
			},
			watch: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				if dc != nil {
					return dynamicWatch(dc, corev1.SchemeGroupVersion.WithResource("configmaps"), namespace)(ctx, o)
				}
				return watchCS.CoreV1().ConfigMaps(namespace).Watch(ctx, o)
			},
			patch: func(ctx context.Context, body []byte) error {
				_, err := updateCS.CoreV1().ConfigMaps(namespace).Patch(ctx, object, types.MergePatchType, body, metav1.PatchOptions{})
				return err
			},
		}
	case "clustertrustbundles":
		return kind{
			ensure: func(ctx context.Context) error {
				pem, err := os.ReadFile(bundleFile)
				if err != nil {
					return err
				}
				_, err = updateCS.CertificatesV1().ClusterTrustBundles().Create(ctx, &certv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: object}, Spec: certv1.ClusterTrustBundleSpec{TrustBundle: string(pem)}}, metav1.CreateOptions{})
				if err != nil && !apierrors.IsAlreadyExists(err) {
					return err
				}
				return nil
			},
			watch: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				if dc != nil {
					return dynamicWatch(dc, certv1.SchemeGroupVersion.WithResource("clustertrustbundles"), "")(ctx, o)
				}
				return watchCS.CertificatesV1().ClusterTrustBundles().Watch(ctx, o)
			},
			patch: func(ctx context.Context, body []byte) error {
				_, err := updateCS.CertificatesV1().ClusterTrustBundles().Patch(ctx, object, types.MergePatchType, body, metav1.PatchOptions{})
				return err
			},
		}
	}
	fatal(fmt.Errorf("-kind %q: configmaps or clustertrustbundles", name))
	return kind{}
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the watchers")
	server := flag.String("server", "", "where the watches go (overrides the kubeconfig's server)")
	updateKubeconfig := flag.String("update-kubeconfig", "", "kubeconfig of the updater (default: -kubeconfig)")
	updateServer := flag.String("update-server", "", "where the updates go (the apiserver itself)")
	kindName := flag.String("kind", "configmaps", "configmaps | clustertrustbundles")
	clientKind := flag.String("client", "typed", "typed (the clientset: protobuf for built-in kinds) | dynamic (JSON)")
	namespace := flag.String("namespace", "scale", "namespace of the ConfigMap")
	object := flag.String("name", "scale-0", "the object updated and watched")
	bundleFile := flag.String("bundle-file", "", "PEM of the ClusterTrustBundle")
	n := flag.Int("watches", 2000, "watches")
	updates := flag.Int("updates", 50, "patches of the object")
	interval := flag.Duration("interval", 200*time.Millisecond, "between patches")
	openConcurrency := flag.Int("open-concurrency", 200, "watches being opened at once at most (a restarting controller-manager opens its informers' watches in a burst, bounded by its controllers)")
	establishTimeout := flag.Duration("establish-timeout", 120*time.Second, "for every watch to get its initial events")
	deliverTimeout := flag.Duration("deliver-timeout", 60*time.Second, "after the last update, for every event to arrive")
	flag.Parse()

	go func() {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
		<-ch
		os.Exit(0)
	}()

	var protos sync.Map
	watchCfg := config(*kubeconfig, *server, &protos)
	watchCS, err := kubernetes.NewForConfig(watchCfg)
	if err != nil {
		fatal(err)
	}
	var dc *dynamic.DynamicClient
	switch *clientKind {
	case "dynamic":
		if dc, err = dynamic.NewForConfig(watchCfg); err != nil {
			fatal(err)
		}
	case "typed":
	default:
		fatal(fmt.Errorf("-client %q: typed or dynamic", *clientKind))
	}
	uk := *updateKubeconfig
	if uk == "" {
		uk = *kubeconfig
	}
	updateCS, err := kubernetes.NewForConfig(config(uk, *updateServer, nil))
	if err != nil {
		fatal(err)
	}
	k := kindOf(*kindName, *namespace, *object, *bundleFile, watchCS, updateCS, dc)
	ctx := context.Background()
	if err := k.ensure(ctx); err != nil {
		fatal(fmt.Errorf("creating the object: %w", err))
	}

	// The client side of every connection a watch went over: how many the transport opened.
	var conns sync.Map
	var retries atomic.Int64
	var established atomic.Int64
	allEstablished := make(chan struct{})
	watchers := make([]*watcher, *n)
	sem := make(chan struct{}, *openConcurrency)
	sendInitial := true
	start := time.Now()
	for i := range watchers {
		w := &watcher{seen: make([]bool, *updates+1), latenciesUs: make([]int32, 0, *updates)}
		watchers[i] = w
		go func() {
			sem <- struct{}{}
			trace := &httptrace.ClientTrace{GotConn: func(c httptrace.GotConnInfo) { conns.Store(c.Conn.LocalAddr().String(), true) }}
			var wi watch.Interface
			var err error
			// A watch refused (a 429, a connection reset in the burst) is opened again, as a reflector would.
			for attempt := 0; ; attempt++ {
				wi, err = k.watch(httptrace.WithClientTrace(ctx, trace), metav1.ListOptions{
					FieldSelector:        "metadata.name=" + *object,
					SendInitialEvents:    &sendInitial,
					ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
					AllowWatchBookmarks:  true,
				})
				if err == nil {
					break
				}
				if attempt >= 20 {
					<-sem
					fatal(fmt.Errorf("a watch failed %d times: %w", attempt+1, err))
				}
				retries.Add(1)
				time.Sleep(time.Duration(100*(attempt+1)) * time.Millisecond)
			}
			<-sem
			synced := false
			for ev := range wi.ResultChan() {
				if ev.Type == watch.Error {
					w.mu.Lock()
					w.lastErr = fmt.Sprintf("%v", ev.Object)
					w.mu.Unlock()
					continue
				}
				m, err := meta.Accessor(ev.Object)
				if err != nil {
					continue
				}
				a := m.GetAnnotations()
				if ev.Type == watch.Bookmark {
					if !synced && a[metav1.InitialEventsAnnotationKey] == "true" {
						synced = true
						if established.Add(1) == int64(len(watchers)) {
							close(allEstablished)
						}
					}
					continue
				}
				if ev.Type != watch.Modified {
					continue
				}
				seq, err1 := strconv.Atoi(a[seqKey])
				sent, err2 := strconv.ParseInt(a[tsKey], 10, 64)
				if err1 != nil || err2 != nil || seq < 1 || seq > *updates {
					continue
				}
				lat := time.Now().UnixNano() - sent
				w.mu.Lock()
				if !w.seen[seq] {
					w.seen[seq] = true
					w.count++
					w.latenciesUs = append(w.latenciesUs, int32(lat/1000))
				}
				w.mu.Unlock()
			}
			w.mu.Lock()
			w.closedEarly = true
			why := w.lastErr
			w.mu.Unlock()
			if !synced {
				// A watch-list that ends before its bookmark is a broken stream (a corrupt body: "gzip:
				// invalid header"); a reflector would fall back to LIST and hide it, this one says so.
				fatal(fmt.Errorf("a watch ended before its initial events: %s", why))
			}
		}()
	}
	protocols := func() []string {
		p := []string{}
		protos.Range(func(k, _ any) bool {
			p = append(p, k.(string))
			return true
		})
		sort.Strings(p)
		return p
	}
	countConns := func() int {
		c := 0
		conns.Range(func(_, _ any) bool { c++; return true })
		return c
	}
	select {
	case <-allEstablished:
	case <-time.After(*establishTimeout):
		fatal(fmt.Errorf("%d of %d watches got their initial events in %s (%d reopened)", established.Load(), *n, *establishTimeout, retries.Load()))
	}
	emit(map[string]any{"phase": "established", "watches": *n, "client": *clientKind, "ms": time.Since(start).Milliseconds(), "protocols": protocols(), "clientConnections": countConns(), "reopened": retries.Load()})

	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch in.Text() {
		case "update":
			run(k, watchers, *updates, *interval, *deliverTimeout)
		case "exit":
			os.Exit(0)
		}
	}
	os.Exit(0)
}

func run(k kind, watchers []*watcher, updates int, interval, deliverTimeout time.Duration) {
	ctx := context.Background()
	patchErrs := 0
	firstErr := ""
	t := time.NewTicker(interval)
	for i := 1; i <= updates; i++ {
		body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{seqKey: strconv.Itoa(i), tsKey: strconv.FormatInt(time.Now().UnixNano(), 10)}}})
		if err := k.patch(ctx, body); err != nil {
			patchErrs++
			if firstErr == "" {
				firstErr = err.Error()
			}
		}
		if i < updates {
			<-t.C
		}
	}
	t.Stop()
	updatesEnd := time.Now()
	want := updates - patchErrs
	deadline := time.Now().Add(deliverTimeout)
	complete := func() bool {
		for _, w := range watchers {
			w.mu.Lock()
			c := w.count
			w.mu.Unlock()
			if c < want {
				return false
			}
		}
		return true
	}
	for !complete() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	allIn := time.Since(updatesEnd)
	var lat []int32
	delivered, short, closed := 0, 0, 0
	watchErr := ""
	for _, w := range watchers {
		w.mu.Lock()
		delivered += w.count
		if w.count < want {
			short++
		}
		if w.closedEarly {
			closed++
		}
		if watchErr == "" && w.lastErr != "" {
			watchErr = w.lastErr
		}
		lat = append(lat, w.latenciesUs...)
		w.mu.Unlock()
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(q float64) float64 {
		if len(lat) == 0 {
			return -1
		}
		i := int(q * float64(len(lat)))
		if i >= len(lat) {
			i = len(lat) - 1
		}
		return float64(lat[i]) / 1000
	}
	emit(map[string]any{
		"phase":              "delivered",
		"updates":            updates,
		"patchErrors":        patchErrs,
		"firstPatchError":    firstErr,
		"expected":           want * len(watchers),
		"delivered":          delivered,
		"watchesShort":       short,
		"watchesClosedEarly": closed,
		"watchError":         watchErr,
		"lastEventAfterMs":   allIn.Milliseconds(),
		"latencyMs":          map[string]float64{"p50": pct(0.5), "p90": pct(0.9), "p99": pct(0.99), "max": pct(1)},
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
