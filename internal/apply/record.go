package apply

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/kubeboot/kubeboot/internal/base/version"
	"github.com/kubeboot/kubeboot/internal/host/node"
	"github.com/kubeboot/kubeboot/internal/host/remote"
)

// applyRecordPath is, under a host's root, apply's record of the step it
// ran there (init or join): written when the step starts, and again with
// the time it completed once it has. A host with a record and no
// completion is one whose step did not finish (it failed after it had
// written the admin kubeconfig, or after its kubelet registered the
// Node; or apply was cancelled): apply resets it and runs the step again,
// where it would otherwise refuse it or count it as done. reset removes
// the record with /var/lib/kubeboot. A host with a node's state and no
// record at all was made by hand, or by an apply older than the record:
// apply goes on as before with it (a member of the cluster is left
// alone), never resets a working node for want of a record.
const applyRecordPath = node.StateDir + "/apply.json"

// hostRecord is the content of applyRecordPath.
type hostRecord struct {
	// Step is init or join.
	Step string `json:"step"`
	// Kubeboot and Kubernetes are the versions of the binary that ran it.
	Kubeboot   string    `json:"kubeboot"`
	Kubernetes string    `json:"kubernetes"`
	Started    time.Time `json:"started"`
	// Completed is when the step ended well; nil while it has not.
	Completed *time.Time `json:"completed,omitempty"`
}

// unfinished says that apply started a step on the host that did not
// complete; false without a record.
func (r *hostRecord) unfinished() bool { return r != nil && r.Completed == nil }

// recordFile is h's record, a host path.
func (h *applyHost) recordFile() string { return h.path(applyRecordPath) }

// path is the host path of a node path on h, under its root.
func (h *applyHost) path(nodePath string) string { return path.Join(h.Root, nodePath) }

// readRecord reads h's record; nil when it has none.
func (h *applyHost) readRecord(ctx context.Context) (*hostRecord, error) {
	out, ok, err := h.conn.ReadFile(ctx, h.recordFile())
	if err != nil || !ok || len(bytes.TrimSpace(out)) == 0 {
		return nil, err
	}
	r := &hostRecord{}
	if err := json.Unmarshal(out, r); err != nil || r.Step == "" {
		return nil, fmt.Errorf("apply's record %s is unreadable (%v): remove it if the host's node works, or reset the host", h.recordFile(), err)
	}
	return r, nil
}

// writeRecord writes r as h's record: a whole file or none.
func (h *applyHost) writeRecord(ctx context.Context, r *hostRecord) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	f := h.recordFile()
	tmp := f + ".tmp"
	cmd := fmt.Sprintf("mkdir -p %s && cat > %s && mv -f %s %s", remote.Quote(path.Dir(f)), remote.Quote(tmp), remote.Quote(tmp), remote.Quote(f))
	var errb strings.Builder
	if err := h.conn.Run(ctx, cmd, strings.NewReader(string(b)+"\n"), nil, &errb); err != nil {
		return fmt.Errorf("writing apply's record %s: %w: %s", f, err, strings.TrimSpace(errb.String()))
	}
	h.record = r
	return nil
}

// startStep records on h that step starts.
func (h *applyHost) startStep(ctx context.Context, step string) error {
	return h.writeRecord(ctx, &hostRecord{Step: step, Kubeboot: version.Get().Release(), Kubernetes: version.Kubernetes, Started: time.Now().UTC().Truncate(time.Second)})
}

// completeStep records on h that the step it started completed.
func (h *applyHost) completeStep(ctx context.Context) error {
	r := *h.record
	t := time.Now().UTC().Truncate(time.Second)
	r.Completed = &t
	return h.writeRecord(ctx, &r)
}
