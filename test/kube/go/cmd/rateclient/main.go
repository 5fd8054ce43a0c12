// rateclient is the load generator of `npm run bench:rate` (bench/rate.ts): client-go's typed
// clientset at its defaults (protobuf for ConfigMaps, HTTP/2 when the server offers it by ALPN,
// gzip asked for by Go's transport) GETs one ConfigMap or LISTs a namespace's ConfigMaps at a fixed
// rate, open loop: request i is due at start + i/rate whatever the earlier ones did, and its latency
// is counted from when it was due, so a stall shows in every request it delays (no coordinated
// omission). It prints JSON lines:
//
//	{"phase":"measure"}    the warm-up is over: requests due from now on are measured
//	{"phase":"window-end"} the last measured request is sent (the caller's CPU window ends here)
//	{"phase":"done",...}   the result: counts, percentiles (ms) of latency (from due time) and of
//	                       service time (from send), a 1 ms histogram, and the protocol used
//
// -verb setup creates the namespace and -objects ConfigMaps of -size bytes of data (idempotent).
// Bounded: at most -max-outstanding requests in flight (more are counted as dropped, not sent),
// each with a 10 s timeout; it exits after warm-up + duration + the stragglers' timeout.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

func emit(v map[string]any) {
	b, _ := json.Marshal(v)
	fmt.Println(string(b))
}

func fatal(err error) {
	emit(map[string]any{"phase": "fatal", "error": err.Error()})
	os.Exit(2)
}

// histogram buckets: 1 ms wide up to this, the rest in the last one.
const histMs = 300

type sample struct {
	due     time.Time
	latency time.Duration // from the due time
	service time.Duration // from the send
	conn    string        // the client side of its connection
}

func pct(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return -1
	}
	i := int(q * float64(len(sorted)))
	if i >= len(sorted) {
		i = len(sorted) - 1
	}
	return float64(sorted[i].Microseconds()) / 1000
}

func summary(d []time.Duration) map[string]any {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return map[string]any{"p50": pct(d, 0.5), "p90": pct(d, 0.9), "p99": pct(d, 0.99), "p999": pct(d, 0.999), "max": pct(d, 1)}
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig")
	server := flag.String("server", "", "overrides the kubeconfig's server")
	verb := flag.String("verb", "get", "get | list | setup")
	namespace := flag.String("namespace", "rate", "namespace")
	name := flag.String("name", "rate-000", "the ConfigMap a GET reads")
	objects := flag.Int("objects", 50, "setup: ConfigMaps to create")
	size := flag.Int("size", 2048, "setup: bytes of data per ConfigMap")
	rate := flag.Float64("rate", 500, "requests per second")
	warmup := flag.Duration("warmup", 3*time.Second, "at the rate, not measured")
	duration := flag.Duration("duration", 20*time.Second, "measured")
	maxOutstanding := flag.Int64("max-outstanding", 4000, "in flight at most; more are dropped")
	slowMs := flag.Float64("slow-ms", 20, "requests slower than this are listed (due time, latency, connection): up to 500")
	flag.Parse()

	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: *kubeconfig}
	overrides := &clientcmd.ConfigOverrides{}
	if *server != "" {
		overrides.ClusterInfo.Server = *server
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		fatal(err)
	}
	// client-go's own rate limiter (QPS 5, burst 10 by default) would make this a 5 req/s
	// benchmark: off, so the requests go out at the rate asked for. Everything else is default.
	cfg.QPS = -1
	cfg.WarningHandler = rest.NoWarnings{}
	// Which protocol the answers came over (HTTP/2 by ALPN, or HTTP/1.1), without changing the transport.
	var proto sync.Map
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(r)
			if err == nil {
				proto.Store(resp.Proto, true)
			}
			return resp, err
		})
	})
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fatal(err)
	}
	cms := cs.CoreV1().ConfigMaps(*namespace)

	if *verb == "setup" {
		ctx := context.Background()
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: *namespace}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			fatal(err)
		}
		value := strings.Repeat("x", *size)
		for i := 0; i < *objects; i++ {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("rate-%03d", i), Labels: map[string]string{"app": "rate"}}, Data: map[string]string{"data": value}}
			if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				fatal(err)
			}
		}
		emit(map[string]any{"phase": "done", "objects": *objects})
		return
	}
	var call func(ctx context.Context) (int, error)
	switch *verb {
	case "get":
		call = func(ctx context.Context) (int, error) {
			_, err := cms.Get(ctx, *name, metav1.GetOptions{})
			return 1, err
		}
	case "list":
		call = func(ctx context.Context) (int, error) {
			l, err := cms.List(ctx, metav1.ListOptions{})
			if err != nil {
				return 0, err
			}
			return len(l.Items), nil
		}
	default:
		fatal(fmt.Errorf("-verb %q: get, list or setup", *verb))
	}

	// Connections the transport dialed for measured requests (HTTP/1.1 opens one per concurrent request).
	var dialed atomic.Int64
	newTrace := func(conn *string) *httptrace.ClientTrace {
		return &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
			if !i.Reused {
				dialed.Add(1)
			}
			*conn = i.Conn.LocalAddr().String()
		}}
	}
	var (
		mu        sync.Mutex
		samples   = make([]sample, 0, int(*rate*duration.Seconds())+16)
		errs      = 0
		firstErr  string
		items     = -1
		dropped   = 0
		inflight  atomic.Int64
		wg        sync.WaitGroup
		interval  = time.Duration(float64(time.Second) / *rate)
		start     = time.Now()
		measureAt = start.Add(*warmup)
		end       = measureAt.Add(*duration)
		lateMax   time.Duration
	)
	measuring := false
	for i := 0; ; i++ {
		due := start.Add(time.Duration(i) * interval)
		if !due.Before(end) {
			break
		}
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		measured := !due.Before(measureAt)
		if measured && !measuring {
			measuring = true
			emit(map[string]any{"phase": "measure"})
		}
		if measured {
			if late := time.Since(due); late > lateMax {
				lateMax = late
			}
		}
		if inflight.Load() >= *maxOutstanding {
			if measured {
				dropped++
			}
			continue
		}
		inflight.Add(1)
		wg.Add(1)
		go func(due time.Time, measured bool) {
			defer wg.Done()
			defer inflight.Add(-1)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var conn string
			if measured {
				ctx = httptrace.WithClientTrace(ctx, newTrace(&conn))
			}
			sent := time.Now()
			n, err := call(ctx)
			done := time.Now()
			if !measured {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs++
				if firstErr == "" {
					firstErr = err.Error()
				}
				return
			}
			items = n
			samples = append(samples, sample{due: due, latency: done.Sub(due), service: done.Sub(sent), conn: conn})
		}(due, measured)
	}
	emit(map[string]any{"phase": "window-end"})
	wg.Wait()

	lat := make([]time.Duration, len(samples))
	svc := make([]time.Duration, len(samples))
	hist := make([]int, histMs+1)
	// The slow ones in due order: a stall of the server delays a run of consecutive requests (each
	// on whatever connection), a per-connection delay (Nagle / delayed ACK) single ones.
	slow := []map[string]any{}
	sort.Slice(samples, func(i, j int) bool { return samples[i].due.Before(samples[j].due) })
	for _, s := range samples {
		if ms := float64(s.latency.Microseconds()) / 1000; ms > *slowMs && len(slow) < 500 {
			slow = append(slow, map[string]any{"t": float64(s.due.Sub(measureAt).Microseconds()) / 1000, "ms": ms, "serviceMs": float64(s.service.Microseconds()) / 1000, "conn": s.conn})
		}
	}
	for i, s := range samples {
		lat[i], svc[i] = s.latency, s.service
		b := int(s.latency / time.Millisecond)
		if b > histMs {
			b = histMs
		}
		hist[b]++
	}
	// Trailing empty buckets off.
	last := len(hist) - 1
	for last > 0 && hist[last] == 0 {
		last--
	}
	protos := []string{}
	proto.Range(func(k, _ any) bool {
		protos = append(protos, k.(string))
		return true
	})
	sort.Strings(protos)
	emit(map[string]any{
		"phase":      "done",
		"verb":       *verb,
		"rate":       *rate,
		"durationS":  duration.Seconds(),
		"ok":         len(samples),
		"errors":     errs,
		"firstError": firstErr,
		"dropped":    dropped,
		"achieved":   float64(len(samples)) / duration.Seconds(),
		"items":      items,
		"latencyMs":  summary(lat),
		"serviceMs":  summary(svc),
		// How late the scheduler itself sent a request (Go's timers, a busy CPU): part of every latency.
		"schedulerLateMaxMs": float64(lateMax.Microseconds()) / 1000,
		"histogramMs":        hist[:last+1],
		"protocols":          protos,
		"newConnections":     dialed.Load(),
		"slow":               slow,
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
