package joinphases

import (
	"os"
	"path/filepath"
	"testing"
)

// A member is restarted only once its raft snapshot is persisted and its
// database moved into place.
func TestSnapshotApplied(t *testing.T) {
	dir := t.TempDir()
	snap := filepath.Join(dir, "member", "snap")
	os.MkdirAll(snap, 0o700)
	if snapshotApplied(dir) {
		t.Error("no snapshot yet, but applied")
	}
	os.WriteFile(filepath.Join(snap, "000000000000021c.snap.db"), nil, 0o600)
	os.WriteFile(filepath.Join(snap, "0000000000000002-000000000000021c.snap"), nil, 0o600)
	if snapshotApplied(dir) {
		t.Error("database not moved into place yet, but applied")
	}
	os.Rename(filepath.Join(snap, "000000000000021c.snap.db"), filepath.Join(snap, "db"))
	if !snapshotApplied(dir) {
		t.Error("snapshot persisted and database in place, but not applied")
	}
}
