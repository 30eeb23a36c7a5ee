package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kubeboot/kubeboot/test/nethost"
)

// testMetrics checks the metrics add-on: `kubectl top nodes` answers with
// a line for each of nodes and `kubectl top pods` with metrics-server's
// own pod, metrics-server scraping each kubelet with the cluster CA
// (never --kubelet-insecure-tls). With initEnd set, it must answer within
// a minute of init's return.
func testMetrics(t *testing.T, cp *nethost.Host, nodes []string, initEnd time.Time) {
	started := time.Since(initEnd)
	defer func() {
		if t.Failed() {
			logs, _ := kubectlErr(cp, "-n", "kube-system", "logs", "deployment/metrics-server", "--tail", "20")
			api, _ := kubectlErr(cp, "get", "apiservice", "v1beta1.metrics.k8s.io", "-o", "jsonpath={.status.conditions}")
			t.Logf("metrics-server's log:\n%s\nits APIService: %s", logs, api)
		}
	}()
	took := eventually(t, 2*time.Minute, time.Second, "kubectl top nodes", func() error {
		out, err := kubectlErr(cp, "top", "nodes", "--no-headers")
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		for _, n := range nodes {
			if !strings.Contains("\n"+out, "\n"+n+" ") {
				return fmt.Errorf("no line for %s:\n%s", n, out)
			}
		}
		return nil
	})
	if !initEnd.IsZero() {
		answered := started + took
		t.Logf("kubectl top nodes answered %s after init returned", answered.Round(100*time.Millisecond))
		switch {
		case started > time.Minute:
			t.Logf("(this check started %s after init: the minute is not measured here)", started.Round(time.Second))
		case answered > time.Minute:
			t.Errorf("kubectl top nodes answered %s after init, more than a minute", answered.Round(time.Second))
		}
	}
	eventually(t, time.Minute, time.Second, "kubectl top pods", func() error {
		out, err := kubectlErr(cp, "top", "pods", "-n", "kube-system", "--no-headers")
		if err != nil || !strings.Contains(out, "metrics-server-") {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	args := kubectl(t, cp, "-n", "kube-system", "get", "deployment", "metrics-server", "-o", "jsonpath={.spec.template.spec.containers[0].args}")
	if strings.Contains(args, "insecure") || !strings.Contains(args, "--kubelet-certificate-authority=") {
		t.Errorf("metrics-server does not verify the kubelets against the cluster CA: %s", args)
	}
}
