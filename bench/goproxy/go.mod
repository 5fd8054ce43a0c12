module mvproxy.bench/goproxy

go 1.19
