package join

import (
	"context"
	"net/http"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"orch/internal/pki"
)

type answer int

func (a answer) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: int(a), Body: http.NoBody}, nil
}

func TestRefusedTransportSignalsOnce(t *testing.T) {
	refused := make(chan struct{}, 1)
	req, _ := http.NewRequest(http.MethodGet, "https://kubernetes/api", nil)
	refusedTransport{next: answer(http.StatusOK), refused: refused}.RoundTrip(req)
	refusedTransport{next: answer(http.StatusForbidden), refused: refused}.RoundTrip(req)
	if len(refused) != 0 {
		t.Fatal("a 200 or a 403 asked for a renewal")
	}
	for range 3 {
		refusedTransport{next: answer(http.StatusUnauthorized), refused: refused}.RoundTrip(req)
	}
	if len(refused) != 1 {
		t.Fatalf("%d renewals asked for after three 401s, want 1 (no blocking)", len(refused))
	}
}

// TestRenewalWhenRefused: certificates the apiserver no longer accepts are
// renewed at once, not when due; a second refusal within refusedPause
// waits.
func TestRenewalWhenRefused(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	f := newFakeServerAt(t, clk.Now)
	f.validity = pki.LeafValidity
	cfg := f.config(t, t.TempDir())
	cfg.Clock = clk
	creds, err := Join(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRenewer(cfg, creds)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	defer func() { cancel(); <-done }()
	old := creds.ClientCertificate()
	clk.Step(2 * refusedPause) // far from the last (no) refusal
	creds.refused <- struct{}{}
	deadline := time.Now().Add(30 * time.Second)
	for creds.ClientCertificate() == old {
		if time.Now().After(deadline) {
			t.Fatal("refused certificates were not renewed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	renewed := creds.ClientCertificate()
	// Twice more at once: too soon. The renewer reads the channel on one
	// goroutine, so once it has taken the third signal it has finished
	// with the second.
	creds.refused <- struct{}{}
	creds.refused <- struct{}{}
	for len(creds.refused) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the renewer did not take the later refusals")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if creds.ClientCertificate() != renewed {
		t.Error("renewed twice within refusedPause")
	}
}
