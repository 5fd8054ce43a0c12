// What kube-apiserver (Go) makes of a client's certificate chain, offline: crypto/tls
// processCertsFromClient (parse every certificate, RSA <= 8192 bits, the leaf's key type), the RSA
// checks its CertificateVerify runs (crypto/rsa's 1024-bit minimum, fips140 checkPublicKey), then the
// x509 authenticator's Verify against the client CA file (KeyUsages: ClientAuth). Usage: x509-oracle
// DIR, with DIR/ca.pem (the --client-ca-file, loaded as kube-apiserver loads it) and, per case ID,
// ID.leaf.pem and ID.chain.pem (what the client sends after it).
// Prints one line per case: "ID USER <cn>", "ID 401: <why>", "ID HANDSHAKE: <why>" or "ID CAFILE: <why>".
package main

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func pems(path string) [][]byte {
	b, _ := os.ReadFile(path)
	var out [][]byte
	for {
		var p *pem.Block
		p, b = pem.Decode(b)
		if p == nil {
			return out
		}
		if p.Type == "CERTIFICATE" && len(p.Headers) == 0 {
			out = append(out, p.Bytes)
		}
	}
}

func main() {
	dir := os.Args[1]
	// --client-ca-file as kube-apiserver loads it (client-go cert.NewPoolFromBytes, ParseCertsPEM):
	// every CERTIFICATE block without headers; one Go cannot parse fails the whole file.
	roots := x509.NewCertPool()
	var loadErr error
	for _, d := range pems(filepath.Join(dir, "ca.pem")) {
		ca, err := x509.ParseCertificate(d)
		if err != nil {
			loadErr = err
			break
		}
		roots.AddCert(ca)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.leaf.pem"))
	sort.Strings(files)
	for _, f := range files {
		id := strings.TrimSuffix(filepath.Base(f), ".leaf.pem")
		if loadErr != nil {
			fmt.Printf("%-28s CAFILE: kube-apiserver does not load it: %v\n", id, loadErr)
			continue
		}
		ders := append(pems(f), pems(filepath.Join(dir, id+".chain.pem"))...)
		fmt.Printf("%-28s %s\n", id, judge(ders, roots))
	}
}

func judge(ders [][]byte, roots *x509.CertPool) string {
	certs := make([]*x509.Certificate, len(ders))
	for i, d := range ders {
		c, err := x509.ParseCertificate(d)
		if err != nil {
			return fmt.Sprintf("HANDSHAKE: parse cert %d: %v", i, err)
		}
		if c.PublicKeyAlgorithm == x509.RSA && c.PublicKey.(*rsa.PublicKey).N.BitLen() > 8192 {
			return "HANDSHAKE: RSA key larger than 8192 bits"
		}
		certs[i] = c
	}
	switch k := certs[0].PublicKey.(type) {
	case *ecdsa.PublicKey, ed25519.PublicKey:
	case *rsa.PublicKey:
		if k.N.Bit(0) == 0 || k.E < 2 || k.E&1 == 0 || k.E > 1<<31-1 || k.N.BitLen() < 1024 {
			return fmt.Sprintf("HANDSHAKE (CertificateVerify): rsa E=%d bits=%d", k.E, k.N.BitLen())
		}
	default:
		return fmt.Sprintf("HANDSHAKE: unsupported public key %T", certs[0].PublicKey)
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		return "401: " + err.Error()
	}
	return "USER " + certs[0].Subject.CommonName
}
