module mvproxy-x509-oracle

go 1.26
