module mvproxy-pem-oracle

go 1.26
