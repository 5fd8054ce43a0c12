// The differential test's oracle (test/security/differential.test.ts): Go's own net/http server,
// the parser kube-apiserver runs, recording every request it parses. Standard library only.
module mvproxy.test/oracle

go 1.26.0
