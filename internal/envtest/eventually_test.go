package envtest

import (
	"errors"
	"testing"
)

func TestEventuallyReturnsOnceTrue(t *testing.T) {
	calls := 0
	Eventually(t, "third call", func() (bool, error) {
		calls++
		if calls < 3 {
			return false, errors.New("not yet")
		}
		return true, nil
	})
	if calls != 3 {
		t.Fatalf("cond called %d times, want 3", calls)
	}
}

func TestEventuallyTrueReturnsOnceTrue(t *testing.T) {
	calls := 0
	EventuallyTrue(t, "second call", func() bool { calls++; return calls == 2 })
	if calls != 2 {
		t.Fatalf("cond called %d times, want 2", calls)
	}
}
