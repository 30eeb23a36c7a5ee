package burst

import "testing"

func TestParseRequests(t *testing.T) {
	text := `# HELP apiserver_request_total [STABLE] Counter of apiserver requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} 50
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="status",verb="PATCH",version="v1"} 90
apiserver_request_total{code="409",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="status",verb="PATCH",version="v1"} 10
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"} 3
# TYPE other_total counter
other_total 7
`
	got, err := parseRequests(text)
	if err != nil {
		t.Fatal(err)
	}
	want := map[requestKey]float64{
		{"POST", "pods", "binding"}: 50,
		{"PATCH", "pods", "status"}: 100,
		{"LIST", "pods", ""}:        3,
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%v: got %v, want %v", k, got[k], v)
		}
	}
}
