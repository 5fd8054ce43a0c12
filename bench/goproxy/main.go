// goproxy: the Go anchor of bench/. net/http/httputil.ReverseProxy in front of one upstream, the
// machinery Kubernetes' in-tree Mixed Version Proxy is built on (k8s.io/apimachinery's
// UpgradeAwareHandler wraps it). Standard library only; built by bench/run.ts with `go build`.
//
//	goproxy -listen 127.0.0.1:PORT -upstream http://127.0.0.1:PORT
//
// Prints "listening" once it accepts connections. GOMAXPROCS follows the CPU affinity (taskset).
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	upstream := flag.String("upstream", "", "upstream base URL")
	flag.Parse()
	u, err := url.Parse(*upstream)
	if err != nil || u.Host == "" {
		log.Fatalf("bad -upstream %q", *upstream)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	// The default Transport keeps only 2 idle connections per host, which would make every
	// concurrent request beyond 2 open a new connection: keep as many as the benchmark uses
	// (nginx gets "keepalive 256", HAProxy reuses by default, mvproxy's undici Pool has no cap).
	proxy.Transport = &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        2048,
		MaxIdleConnsPerHost: 2048,
		IdleConnTimeout:     90 * time.Second,
	}
	proxy.ErrorLog = log.New(os.Stderr, "goproxy: ", 0)
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("{\"listening\":%q}\n", ln.Addr().String())
	srv := &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.Serve(ln))
}
