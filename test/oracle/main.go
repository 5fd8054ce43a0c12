// Command oracle is Go's net/http server in two roles, recording every request it parses:
//
//   - upstream: plain HTTP/1.1, the "kube-apiserver" behind an mvproxy. It serves the documents
//     mvproxy fetches for itself at their exact paths (/api, /apis, /readyz, ...) and records every
//     other request: one mvproxy forwarded for a client.
//   - direct: the same bytes a test client sent to mvproxy, sent to Go instead, plain (HTTP/1.1)
//     and TLS (HTTP/2 and HTTP/1.1 by ALPN): what Go makes of the client's own bytes.
//
// An answer Go's server writes itself (400 "invalid header value", 501, ...), without reaching a
// handler, is recorded as an error of its role: on the upstream it means mvproxy forwarded bytes Go
// refused. Every handler answer carries X-Oracle, which tells the two apart.
//
// With -tls-cert and -tls-key each upstream also listens with TLS (port `upstream-N-tls`, the same
// role), HTTP/2 and HTTP/1.1 by ALPN as kube-apiserver: mvproxy writes watches there with its own
// HTTP/2 client (src/upstream/h2). The oracle terminates TLS itself and hands Go's server the
// plaintext (HTTP/2 with prior knowledge after an h2 handshake), so it sees what Go writes: an
// RST_STREAM or GOAWAY with an error code is Go refusing what mvproxy sent, as a 400 is on HTTP/1.1.
//
// A control listener (plain) serves GET /log (JSON) and POST /reset. The first line on stdout is
// JSON with every port.
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

// Recorded is one request as Go's server parsed it. Byte strings are arrays of bytes (JSON numbers)
// so that nothing is lost to an encoding.
type Recorded struct {
	Seq    int    `json:"seq"`
	Role   string `json:"role"`
	Conn   string `json:"conn"`
	Proto  string `json:"proto"`
	Method []byte `json:"method"`
	Target []byte `json:"target"`
	Host   []byte `json:"host"`
	// Headers: canonical name, then each value in order, as Go's Header holds them (sorted by name).
	Headers []Field `json:"headers"`
	Body    []byte  `json:"body"`
	// TE: Go's TransferEncoding (["chunked"] for a chunked body); ContentLength as Go read it.
	TE            []string `json:"te"`
	ContentLength int64    `json:"contentLength"`
}

type Field struct {
	Name   []byte   `json:"name"`
	Values [][]byte `json:"values"`
}

// ProtocolError is an answer Go's server wrote without a handler (the request was refused while parsing).
type ProtocolError struct {
	Seq  int    `json:"seq"`
	Role string `json:"role"`
	Conn string `json:"conn"`
	Text string `json:"text"`
}

type recorder struct {
	mu       sync.Mutex
	seq      int
	requests []Recorded
	errors   []ProtocolError
	// inflight counts handlers still reading a body to record: a request is recorded after its body,
	// so one whose client closed mid-body is recorded just after the close, and GET /log waits for
	// it (the test read the log of the client's direct bytes before Go had recorded such a request,
	// and judged mvproxy's copy of it "one request more").
	inflight int
}

func (r *recorder) begin() {
	r.mu.Lock()
	r.inflight++
	r.mu.Unlock()
}

// settled locks r once no handler is still recording, or after 2 s (a body that never ends).
func (r *recorder) settled() {
	deadline := time.Now().Add(2 * time.Second)
	for {
		r.mu.Lock()
		if r.inflight == 0 || time.Now().After(deadline) {
			return
		}
		r.mu.Unlock()
		time.Sleep(2 * time.Millisecond)
	}
}

func (r *recorder) add(x Recorded) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inflight--
	r.seq++
	x.Seq = r.seq
	if len(r.requests) < 100000 {
		r.requests = append(r.requests, x)
	}
}

func (r *recorder) addError(e ProtocolError) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	e.Seq = r.seq
	if len(r.errors) < 100000 {
		r.errors = append(r.errors, e)
	}
}

// watchConn sees every write of Go's server on a plain connection: one that starts a response
// without X-Oracle is Go's own refusal.
type watchConn struct {
	net.Conn
	rec  *recorder
	role string
}

func (c *watchConn) Write(b []byte) (int, error) {
	if len(b) >= 9 && string(b[:9]) == "HTTP/1.1 " {
		head := string(b)
		if i := strings.Index(head, "\r\n\r\n"); i >= 0 {
			head = head[:i]
		}
		if !strings.Contains(head, "\r\nX-Oracle: 1") && !strings.HasPrefix(string(b), "HTTP/1.1 100 ") {
			text := string(b)
			if len(text) > 300 {
				text = text[:300]
			}
			c.rec.addError(ProtocolError{Role: c.role, Conn: c.RemoteAddr().String(), Text: text})
		}
	}
	return c.Conn.Write(b)
}

type watchListener struct {
	net.Listener
	rec  *recorder
	role string
}

func (l *watchListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &watchConn{Conn: c, rec: l.rec, role: l.role}, nil
}

// h2WatchConn is watchConn for a connection Go serves as HTTP/2: it reads the frames Go writes and
// records each RST_STREAM or GOAWAY that carries an error code (RFC 9113 §7; NO_ERROR is a normal end).
type h2WatchConn struct {
	net.Conn
	rec     *recorder
	role    string
	pending []byte
}

var h2Codes = []string{"NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR", "SETTINGS_TIMEOUT", "STREAM_CLOSED", "FRAME_SIZE_ERROR", "REFUSED_STREAM", "CANCEL", "COMPRESSION_ERROR", "CONNECT_ERROR", "ENHANCE_YOUR_CALM", "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED"}

func h2Code(c uint32) string {
	if int(c) < len(h2Codes) {
		return h2Codes[c]
	}
	return fmt.Sprintf("code %d", c)
}

func (c *h2WatchConn) Write(b []byte) (int, error) {
	c.pending = append(c.pending, b...)
	for len(c.pending) >= 9 {
		n := int(c.pending[0])<<16 | int(c.pending[1])<<8 | int(c.pending[2])
		if len(c.pending) < 9+n {
			break
		}
		typ, stream, payload := c.pending[3], binary.BigEndian.Uint32(c.pending[5:9])&0x7fffffff, c.pending[9:9+n]
		if typ == 0x3 && n >= 4 {
			if code := binary.BigEndian.Uint32(payload); code != 0 {
				c.rec.addError(ProtocolError{Role: c.role, Conn: c.RemoteAddr().String(), Text: fmt.Sprintf("HTTP/2 RST_STREAM %s on stream %d", h2Code(code), stream)})
			}
		} else if typ == 0x7 && n >= 8 {
			if code := binary.BigEndian.Uint32(payload[4:8]); code != 0 {
				c.rec.addError(ProtocolError{Role: c.role, Conn: c.RemoteAddr().String(), Text: fmt.Sprintf("HTTP/2 GOAWAY %s: %q", h2Code(code), payload[8:])})
			}
		}
		c.pending = c.pending[9+n:]
	}
	if len(c.pending) == 0 {
		c.pending = nil
	}
	return c.Conn.Write(b)
}

// tlsTerminator does the TLS handshake itself (ALPN h2 or http/1.1) and hands Go's server the
// plaintext connection, watched as HTTP/2 or HTTP/1.1 by what was negotiated.
type tlsTerminator struct {
	net.Listener
	cfg  *tls.Config
	rec  *recorder
	role string
}

func (l *tlsTerminator) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		tc := tls.Server(c, l.cfg)
		_ = tc.SetDeadline(time.Now().Add(10 * time.Second))
		if err := tc.Handshake(); err != nil {
			_ = c.Close()
			continue
		}
		_ = tc.SetDeadline(time.Time{})
		if tc.ConnectionState().NegotiatedProtocol == "h2" {
			return &h2WatchConn{Conn: tc, rec: l.rec, role: l.role}, nil
		}
		return &watchConn{Conn: tc, rec: l.rec, role: l.role}, nil
	}
}

const aggregated = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

func record(rec *recorder, role string, r *http.Request) {
	rec.begin()
	body, _ := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	names := make([]string, 0, len(r.Header))
	for k := range r.Header {
		names = append(names, k)
	}
	sort.Strings(names)
	fields := make([]Field, 0, len(names))
	for _, k := range names {
		f := Field{Name: []byte(k)}
		for _, v := range r.Header[k] {
			f.Values = append(f.Values, []byte(v))
		}
		fields = append(fields, f)
	}
	rec.add(Recorded{Role: role, Conn: r.RemoteAddr, Proto: r.Proto, Method: []byte(r.Method), Target: []byte(r.RequestURI), Host: []byte(r.Host), Headers: fields, Body: body, TE: r.TransferEncoding, ContentLength: r.ContentLength})
}

func answer(w http.ResponseWriter, status int, contentType, body string) {
	w.Header().Set("X-Oracle", "1")
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

const success = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":200}`

func upstreamHandler(rec *recorder, role string, api, apis []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// mvproxy's own requests (discovery, also a peer's through the peer listener; health; the
		// lists it reads for exclusions) by their exact paths; every other request is a client's.
		switch r.URL.Path {
		case "/api":
			answer(w, 200, aggregated, string(api))
		case "/apis":
			answer(w, 200, aggregated, string(apis))
		case "/readyz", "/livez", "/healthz":
			answer(w, 200, "text/plain; charset=utf-8", "ok")
		case "/version":
			answer(w, 200, "application/json", `{"major":"1","minor":"37","gitVersion":"v1.37.0-oracle"}`)
		case "/openapi/v3":
			answer(w, 200, "application/json", `{"paths":{}}`)
		case "/apis/apiextensions.k8s.io/v1/customresourcedefinitions":
			answer(w, 200, "application/json", `{"kind":"CustomResourceDefinitionList","apiVersion":"apiextensions.k8s.io/v1","metadata":{"resourceVersion":"1"},"items":[]}`)
		case "/apis/apiregistration.k8s.io/v1/apiservices":
			answer(w, 200, "application/json", `{"kind":"APIServiceList","apiVersion":"apiregistration.k8s.io/v1","metadata":{"resourceVersion":"1"},"items":[]}`)
		default:
			record(rec, role, r)
			answer(w, 200, "application/json", success)
		}
	})
}

func directHandler(rec *recorder, role string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		record(rec, role, r)
		answer(w, 200, "application/json", success)
	})
}

func selfSigned() tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		log.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "oracle"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		log.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func listen() net.Listener {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	return l
}

func port(l net.Listener) int { return l.Addr().(*net.TCPAddr).Port }

func main() {
	apiFile := flag.String("api", "", "aggregated discovery for /api")
	apisFile := flag.String("apis", "", "aggregated discovery for /apis")
	upstreams := flag.Int("upstreams", 1, "upstream listeners (one per mvproxy member), roles upstream-0, upstream-1, ...")
	certFile := flag.String("tls-cert", "", "serving certificate (PEM) of the upstreams' TLS listeners, ports upstream-N-tls")
	keyFile := flag.String("tls-key", "", "its key (PEM)")
	flag.Parse()
	api, err := os.ReadFile(*apiFile)
	if err != nil {
		log.Fatal(err)
	}
	apisList := strings.Split(*apisFile, ",")
	rec := &recorder{}
	ports := map[string]int{}
	serve := func(name string, l net.Listener, h http.Handler) {
		ports[name] = port(l)
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
		go func() { _ = srv.Serve(l) }()
	}
	for i := 0; i < *upstreams; i++ {
		apis, err := os.ReadFile(apisList[i%len(apisList)])
		if err != nil {
			log.Fatal(err)
		}
		role := fmt.Sprintf("upstream-%d", i)
		serve(role, &watchListener{Listener: listen(), rec: rec, role: role}, upstreamHandler(rec, role, api, apis))
		if *certFile != "" {
			cert, err := tls.LoadX509KeyPair(*certFile, *keyFile)
			if err != nil {
				log.Fatal(err)
			}
			var protocols http.Protocols
			protocols.SetHTTP1(true)
			protocols.SetUnencryptedHTTP2(true) // the plaintext of an h2 handshake, tlsTerminator
			l := listen()
			ports[role+"-tls"] = port(l)
			srv := &http.Server{Handler: upstreamHandler(rec, role, api, apis), ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0), Protocols: &protocols}
			go func() {
				_ = srv.Serve(&tlsTerminator{Listener: l, cfg: &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}}, rec: rec, role: role})
			}()
		}
	}
	serve("direct", &watchListener{Listener: listen(), rec: rec, role: "direct"}, directHandler(rec, "direct"))
	// TLS: HTTP/2 and HTTP/1.1 by ALPN, as kube-apiserver serves them.
	tl := listen()
	ports["directTLS"] = port(tl)
	tlsSrv := &http.Server{Handler: directHandler(rec, "directTLS"), ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0), TLSConfig: &tls.Config{Certificates: []tls.Certificate{selfSigned()}}}
	go func() { _ = tlsSrv.ServeTLS(tl, "", "") }()
	control := http.NewServeMux()
	control.HandleFunc("/log", func(w http.ResponseWriter, r *http.Request) {
		rec.settled()
		defer rec.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"requests": rec.requests, "errors": rec.errors})
	})
	control.HandleFunc("/reset", func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		rec.requests = nil
		rec.errors = nil
		w.WriteHeader(204)
	})
	cl := listen()
	serve("control", cl, control)
	out, _ := json.Marshal(ports)
	fmt.Println(string(out))
	select {}
}
