package poll

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestUntil(t *testing.T) {
	ctx := context.Background()
	// Holds at the third call; progress is said between.
	n, said := 0, 0
	err := Until(ctx, time.Millisecond, 0, func(time.Duration, error) { said++ }, func(context.Context) error {
		if n++; n < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if err != nil || n != 3 || said != 2 {
		t.Errorf("err %v after %d calls, %d progress lines", err, n, said)
	}

	// A Stop error ends it at once, unwrapped.
	fatal := errors.New("refused")
	n = 0
	err = Until(ctx, time.Millisecond, time.Hour, nil, func(context.Context) error { n++; return Stop(fatal) })
	if err != fatal || n != 1 {
		t.Errorf("stop: %v after %d calls", err, n)
	}

	// The context ends first: Expired with the last error.
	tctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	err = Until(tctx, 5*time.Millisecond, time.Hour, nil, func(context.Context) error { return errors.New("no pod CIDR yet") })
	var exp *Expired
	if !errors.As(err, &exp) || exp.Last.Error() != "no pod CIDR yet" || exp.Waited < 30*time.Millisecond {
		t.Errorf("expired: %#v", err)
	}

	// A call cut short by the end of the wait does not hide the failure
	// before it.
	tctx, cancel3 := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel3()
	n = 0
	err = Until(tctx, 5*time.Millisecond, time.Hour, nil, func(ctx context.Context) error {
		if n++; n == 1 {
			return errors.New("500: etcd not ready")
		}
		<-ctx.Done()
		return ctx.Err()
	})
	if !errors.As(err, &exp) || exp.Last.Error() != "500: etcd not ready" {
		t.Errorf("cut short: %#v", err)
	}

	// A context that has ended before the first call: Expired with its error.
	done, cancel2 := context.WithCancel(ctx)
	cancel2()
	err = Until(done, time.Millisecond, time.Hour, nil, func(context.Context) error { return errors.New("x") })
	if !errors.As(err, &exp) {
		t.Errorf("ended context: %#v", err)
	}
}

func TestProgress(t *testing.T) {
	for _, tc := range []struct {
		name     string
		withLast bool
		last     error
		want     string
	}{
		{"without the error", false, errors.New("connection refused"), "[kubelet-check] Still waiting for the kubelet (12s so far)"},
		{"with the error", true, errors.New("connection refused"), "[kubelet-check] Still waiting for the kubelet (12s so far): connection refused"},
		{"no error to add", true, nil, "[kubelet-check] Still waiting for the kubelet (12s so far)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var lines []string
			logf := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
			Progress(logf, "kubelet-check", "the kubelet", tc.withLast)(12400*time.Millisecond, tc.last)
			if len(lines) != 1 || lines[0] != tc.want {
				t.Errorf("got %q, want %q", lines, tc.want)
			}
		})
	}
}
