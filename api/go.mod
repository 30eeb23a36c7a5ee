module github.com/kubeboot/kubeboot/api

go 1.26
