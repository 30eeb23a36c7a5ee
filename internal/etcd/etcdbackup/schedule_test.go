package etcdbackup

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Once writes a snapshot named after the node and the time, keeps the
// newest Keep of its own, and leaves every other file alone; the newest
// file's time sets the next snapshot.
func TestScheduleKeepsTheNewest(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "snaps")
	now := time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC)
	var saved []string
	s := &Schedule{Dir: dir, Node: "cp-1", Interval: time.Hour, Keep: 3, Logf: t.Logf,
		Now: func() time.Time { return now },
		Save: func(_ context.Context, file string) (*Manifest, error) {
			saved = append(saved, file)
			return &Manifest{Revision: 7}, os.WriteFile(file, []byte("x"), 0o600)
		}}
	os.MkdirAll(dir, 0o755)
	foreign := []string{"operator.snapshot", "etcd-cp-10-20261201T060000Z.snapshot", "etcd-cp-1-garbage.snapshot"}
	for _, f := range foreign {
		os.WriteFile(filepath.Join(dir, f), nil, 0o600)
	}
	for i := 0; i < 5; i++ {
		if _, err := s.Once(context.Background()); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Hour)
	}
	files, times, err := s.Files()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3 || files[0] != saved[2] || files[2] != saved[4] || !times[2].Equal(time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC)) {
		t.Errorf("kept %v %v, saved %v", files, times, saved)
	}
	for _, f := range foreign {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("a file not the schedule's was touched: %v", err)
		}
	}
	if st, _ := os.Stat(dir); st.Mode().Perm() != 0o700 {
		t.Errorf("the directory has mode %v, want 0700", st.Mode().Perm())
	}
	// A failed save keeps what there is.
	s.Save = func(context.Context, string) (*Manifest, error) { return nil, errors.New("etcd is down") }
	if _, err := s.Once(context.Background()); err == nil {
		t.Error("a failed save: no error")
	}
	if files, _, _ := s.Files(); len(files) != 3 {
		t.Errorf("after a failed save: %v", files)
	}
}

func TestScheduleRefusesNoInterval(t *testing.T) {
	if err := (&Schedule{Keep: 1}).Run(context.Background()); err == nil {
		t.Error("no interval: no error")
	}
}
