package etcdbackup

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Schedule saves a bundle into Dir every Interval and keeps the newest
// Keep of the files it names (other files in Dir are left alone). The
// time of the newest file sets the next one, so a daemon restart does not
// restart the clock.
type Schedule struct {
	// Dir is a host path; it is made 0700: the bundles hold the CA keys.
	Dir      string
	Node     string
	Interval time.Duration
	Keep     int
	// Save writes one bundle to file (Save with the cluster's
	// configuration, in the daemon).
	Save func(ctx context.Context, file string) (*Manifest, error)
	Logf func(format string, args ...any)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

const stampLayout = "20060102T150405Z"

func (s *Schedule) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Schedule) prefix() string { return "etcd-" + s.Node + "-" }

// FileName is the file of a snapshot taken at t.
func (s *Schedule) FileName(t time.Time) string {
	return filepath.Join(s.Dir, s.prefix()+t.UTC().Format(stampLayout)+".snapshot")
}

// Files are the schedule's snapshots in Dir, oldest first, with their times.
func (s *Schedule) Files() ([]string, []time.Time, error) {
	entries, err := os.ReadDir(s.Dir)
	if err != nil && !os.IsNotExist(err) {
		return nil, nil, err
	}
	var files []string
	var times []time.Time
	// ReadDir sorts by name, and the layout sorts by time.
	for _, e := range entries {
		stamp, ok := strings.CutPrefix(e.Name(), s.prefix())
		if !ok || e.IsDir() {
			continue
		}
		if stamp, ok = strings.CutSuffix(stamp, ".snapshot"); !ok {
			continue
		}
		if t, err := time.Parse(stampLayout, stamp); err == nil {
			files = append(files, filepath.Join(s.Dir, e.Name()))
			times = append(times, t)
		}
	}
	return files, times, nil
}

// Once saves a snapshot now and removes the oldest beyond Keep.
func (s *Schedule) Once(ctx context.Context) (string, error) {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return "", err
	}
	if err := os.Chmod(s.Dir, 0o700); err != nil {
		return "", err
	}
	start := s.now()
	file := s.FileName(start)
	m, err := s.Save(ctx, file)
	if err != nil {
		return "", fmt.Errorf("saving %s: %w", file, err)
	}
	s.Logf("[snapshot] Saved etcd at revision %d (%d keys, %.1f MiB) with the cluster's configuration and keys to %s (mode 0600) in %s",
		m.Revision, m.Keys, float64(m.SnapshotBytes)/(1<<20), file, s.now().Sub(start).Round(time.Millisecond))
	files, _, err := s.Files()
	if err != nil {
		return file, err
	}
	for len(files) > s.Keep {
		if err := os.Remove(files[0]); err != nil {
			return file, err
		}
		s.Logf("[snapshot] Removed %s: %d newer snapshots are kept", files[0], s.Keep)
		files = files[1:]
	}
	return file, nil
}

// Run takes snapshots until ctx ends. A failed one is retried after a
// tenth of the interval (at most 10 minutes later), not a whole interval.
func (s *Schedule) Run(ctx context.Context) error {
	if s.Interval <= 0 || s.Keep < 1 {
		return fmt.Errorf("an interval and at least one snapshot to keep are needed (interval %s, keep %d)", s.Interval, s.Keep)
	}
	next := s.now().Add(s.Interval)
	if _, times, err := s.Files(); err == nil && len(times) > 0 {
		next = times[len(times)-1].Add(s.Interval)
	}
	s.Logf("[snapshot] Saving an etcd snapshot every %s into %s, keeping %d; the next at %s", s.Interval, s.Dir, s.Keep, next.UTC().Format(time.RFC3339))
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(max(0, next.Sub(s.now()))):
		}
		if _, err := s.Once(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			retry := min(s.Interval/10, 10*time.Minute)
			s.Logf("[snapshot] %v; trying again in %s", err, retry)
			next = s.now().Add(retry)
			continue
		}
		next = s.now().Add(s.Interval)
	}
}
