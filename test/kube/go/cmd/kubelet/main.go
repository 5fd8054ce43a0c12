// kubelet is the real-Kubernetes suite's fake kubelet: the part of a kubelet's HTTPS server that
// kube-apiserver forwards pod streams to, served by Kubernetes' own streaming code
// (k8s.io/cri-streaming, which the kubelet's CRI streaming server runs), so exec, attach and
// port-forward speak exactly the SPDY (and v4 WebSocket) protocols a kubelet speaks. The "containers"
// are this host: exec runs the command here (under a pseudo-terminal when tty is asked, so a resize
// reaches it), attach talks to a line echo, port-forward dials 127.0.0.1:<port>, and container logs
// print numbered lines (-log-lines of them; followed: one every -log-interval until -log-stop-file
// exists, then the stream ends, as when a container exits).
//
// Routes (as pkg/kubelet/server/server.go): /exec/{ns}/{pod}/{container}, /attach/{ns}/{pod}/{container},
// /portForward/{ns}/{pod}, /containerLogs/{ns}/{pod}/{container}, /healthz. Clients must present a
// certificate signed by -client-ca (kube-apiserver's --kubelet-client-certificate), as a kubelet
// with x509 authentication demands.
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/creack/pty"
	"k8s.io/cri-streaming/pkg/streaming/portforward"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"
)

// The kubelet's defaults (pkg/kubelet/server: streamingIdleTimeout 4h is the kubelet config default;
// the creation timeout is remotecommand.DefaultStreamCreationTimeout).
const (
	idleTimeout           = 4 * time.Hour
	streamCreationTimeout = remotecommand.DefaultStreamCreationTimeout
)

type runtime struct {
	logLines    int
	logInterval time.Duration
	logStopFile string
}

// ExecInContainer runs the command on this host. With tty the command gets a pseudo-terminal whose
// size follows the client's resize events (the first one is the client's terminal size).
func (r *runtime) ExecInContainer(ctx context.Context, name, uid, container string, cmd []string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize, _ time.Duration) error {
	if len(cmd) == 0 {
		return errors.New("no command")
	}
	c := exec.CommandContext(ctx, cmd[0], cmd[1:]...)
	var err error
	if tty {
		err = runWithPTY(c, in, out, resize)
	} else {
		c.Stdin, c.Stdout = in, out
		if errw != nil {
			c.Stderr = errw
		}
		err = c.Run()
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return utilexec.CodeExitError{Err: err, Code: exitErr.ExitCode()}
	}
	return err
}

func runWithPTY(c *exec.Cmd, in io.Reader, out io.Writer, resize <-chan remotecommand.TerminalSize) error {
	// Wait for the client's first size so the command starts with it (kubectl sends it at once).
	var size *pty.Winsize
	select {
	case s, ok := <-resize:
		if ok {
			size = &pty.Winsize{Cols: s.Width, Rows: s.Height}
		}
	case <-time.After(2 * time.Second):
	}
	f, err := pty.StartWithSize(c, size)
	if err != nil {
		return err
	}
	defer f.Close()
	go func() {
		for s := range resize {
			_ = pty.Setsize(f, &pty.Winsize{Cols: s.Width, Rows: s.Height})
		}
	}()
	if in != nil {
		go func() { _, _ = io.Copy(f, in) }()
	}
	copied := make(chan struct{})
	go func() {
		_, _ = io.Copy(out, f) // ends with EIO once the command exits and the pty drains
		close(copied)
	}()
	err = c.Wait()
	select {
	case <-copied:
	case <-time.After(2 * time.Second):
	}
	return err
}

// AttachContainer attaches to the container's main process, here a line echo: each line read from
// stdin comes back on stdout as "echo: <line>"; attach ends when the client closes stdin.
func (r *runtime) AttachContainer(ctx context.Context, name, uid, container string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error {
	go func() {
		for range resize {
		}
	}()
	fmt.Fprintf(out, "attached to %s/%s\n", name, container)
	if in == nil {
		<-ctx.Done()
		return nil
	}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		fmt.Fprintf(out, "echo: %s\n", sc.Text())
	}
	return nil
}

// PortForward connects the stream to 127.0.0.1:<port> (the pod's network is this host's loopback).
func (r *runtime) PortForward(ctx context.Context, name, uid string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port))))
	if err != nil {
		return fmt.Errorf("pod %s: port %d: %w", name, port, err)
	}
	defer conn.Close()
	done := make(chan struct{}, 2)
	go func() {
		_, _ = io.Copy(conn, stream)
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(stream, conn)
		done <- struct{}{}
	}()
	<-done
	<-done
	return nil
}

// parts splits /<route>/a/b/c into its n segments after the route, or nil.
func parts(path, route string, n int) []string {
	rest, ok := strings.CutPrefix(path, "/"+route+"/")
	if !ok {
		return nil
	}
	p := strings.Split(rest, "/")
	if len(p) < n {
		return nil
	}
	return p[:n]
}

func (r *runtime) serve(w http.ResponseWriter, req *http.Request) {
	log.Printf("%s %s upgrade=%q", req.Method, req.URL.RequestURI(), req.Header.Get("Upgrade"))
	switch {
	case parts(req.URL.Path, "exec", 3) != nil:
		p := parts(req.URL.Path, "exec", 3)
		opts, err := remotecommand.NewOptions(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		remotecommand.ServeExec(w, req, r, p[0]+"/"+p[1], "", p[2], req.URL.Query()["command"], opts, idleTimeout, streamCreationTimeout, remotecommand.SupportedStreamingProtocols)
	case parts(req.URL.Path, "attach", 3) != nil:
		p := parts(req.URL.Path, "attach", 3)
		opts, err := remotecommand.NewOptions(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		remotecommand.ServeAttach(w, req, r, p[0]+"/"+p[1], "", p[2], opts, idleTimeout, streamCreationTimeout, remotecommand.SupportedStreamingProtocols)
	case parts(req.URL.Path, "portForward", 2) != nil:
		p := parts(req.URL.Path, "portForward", 2)
		opts, err := portforward.NewV4Options(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		portforward.ServePortForward(w, req, r, p[0]+"/"+p[1], "", opts, idleTimeout, streamCreationTimeout, portforward.SupportedProtocols)
	case parts(req.URL.Path, "containerLogs", 3) != nil:
		r.logs(w, req)
	case req.URL.Path == "/healthz":
		_, _ = io.WriteString(w, "ok")
	default:
		http.NotFound(w, req)
	}
}

func (r *runtime) logs(w http.ResponseWriter, req *http.Request) {
	w.Header().Set("Content-Type", "text/plain")
	flusher, _ := w.(http.Flusher)
	if req.URL.Query().Get("follow") != "true" {
		for i := 1; i <= r.logLines; i++ {
			fmt.Fprintf(w, "log line %d\n", i)
		}
		return
	}
	// Followed: a line every interval until the container "exits" (-log-stop-file appears), so a
	// client sees lines while they are written; then the stream ends as a kubelet ends it.
	for i := 1; ; i++ {
		if _, err := fmt.Fprintf(w, "log line %d\n", i); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
		if _, err := os.Stat(r.logStopFile); err == nil || i >= 100000 {
			fmt.Fprintf(w, "log ended\n")
			return
		}
		select {
		case <-req.Context().Done():
			return
		case <-time.After(r.logInterval):
		}
	}
}

func main() {
	listen := flag.String("listen", "127.0.0.1:10250", "address to listen on")
	certFile := flag.String("tls-cert-file", "", "serving certificate")
	keyFile := flag.String("tls-private-key-file", "", "serving key")
	clientCA := flag.String("client-ca-file", "", "CA that signs kube-apiserver's kubelet client certificate")
	logLines := flag.Int("log-lines", 20, "lines a container log has")
	logInterval := flag.Duration("log-interval", 100*time.Millisecond, "pause between followed log lines")
	logStopFile := flag.String("log-stop-file", "", "a followed log ends once this file exists")
	flag.Parse()

	pem, err := os.ReadFile(*clientCA)
	if err != nil {
		log.Fatalf("client CA: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		log.Fatalf("client CA %s: no certificates", *clientCA)
	}
	r := &runtime{logLines: *logLines, logInterval: *logInterval, logStopFile: *logStopFile}
	srv := &http.Server{
		Addr:      *listen,
		Handler:   http.HandlerFunc(r.serve),
		TLSConfig: &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool, NextProtos: []string{"http/1.1"}},
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatalf("listen: %v", err)
	}
	log.Printf("fake kubelet serving on %s", ln.Addr())
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
		<-sig
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		os.Exit(0)
	}()
	if err := srv.ServeTLS(ln, *certFile, *keyFile); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatalf("serve: %v", err)
	}
}
