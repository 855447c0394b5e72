package envtest

import (
	"fmt"
	"testing"
	"time"
)

// EventuallyTimeout is how long Eventually waits for a condition: long
// enough for a loaded -race run on two cores.
const EventuallyTimeout = 90 * time.Second

// eventuallyInterval is how often Wait asks again.
const eventuallyInterval = 20 * time.Millisecond

// Wait asks cond every few milliseconds until it returns true, and returns
// an error if it has not by EventuallyTimeout. An error from cond counts as
// "not yet"; the last one is part of the returned error.
func Wait(cond func() (bool, error)) error {
	deadline := time.Now().Add(EventuallyTimeout)
	var lastErr error
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		if err != nil {
			lastErr = err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("still not true after %v (last error: %v)", EventuallyTimeout, lastErr)
		}
		time.Sleep(eventuallyInterval)
	}
}

// Eventually is Wait that fails the test when time runs out; what names
// the condition in the report.
func Eventually(t testing.TB, what string, cond func() (bool, error)) {
	t.Helper()
	if err := Wait(cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// EventuallyTrue is Eventually for a condition that cannot fail.
func EventuallyTrue(t testing.TB, what string, cond func() bool) {
	t.Helper()
	Eventually(t, what, func() (bool, error) { return cond(), nil })
}
