package prober

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestVerdict(t *testing.T) {
	tests := []struct {
		typ     probeType
		o       outcome
		output  string
		err     error
		want    result
		counted bool
		event   string // type reason message; "" for none
	}{
		{liveness, outcomeSuccess, "ok", nil, success, true, ""},
		{liveness, outcomeFailure, "HTTP probe failed with statuscode: 500", nil, failure, true,
			"Warning Unhealthy Liveness probe failed: HTTP probe failed with statuscode: 500"},
		{readiness, outcomeFailure, "", nil, failure, true, "Warning Unhealthy Readiness probe failed: "},
		{startup, outcomeFailure, "dial tcp: refused", nil, failure, true, "Warning Unhealthy Startup probe failed: dial tcp: refused"},
		{readiness, outcomeWarning, "Probe terminated redirects, Response body: x", nil, success, true,
			"Warning ProbeWarning Readiness probe warning: Probe terminated redirects, Response body: x"},
		{liveness, outcomeUnknown, "", errors.New(`port "http" not found`), failure, false,
			`Warning Unhealthy Liveness probe errored and resulted in unknown state: port "http" not found`},
		{readiness, outcomeFailure, "", errors.New("unexpected EOF"), failure, false,
			"Warning Unhealthy Readiness probe errored and resulted in failure state: unexpected EOF"},
		{liveness, outcomeUnknown, "", nil, failure, true, ""},
	}
	for _, tt := range tests {
		r, counted, ev := verdict(tt.typ, tt.o, tt.output, tt.err)
		got := ""
		if ev != nil {
			got = ev.Type + " " + ev.Reason + " " + ev.Message
		}
		if r != tt.want || counted != tt.counted || got != tt.event {
			t.Errorf("verdict(%v, %v, %q, %v) = %v, %v, %q; want %v, %v, %q", tt.typ, tt.o, tt.output, tt.err, r, counted, got, tt.want, tt.counted, tt.event)
		}
	}
}

func TestCounter(t *testing.T) {
	tests := []struct {
		name       string
		successes  int32
		failures   int32
		in         []result
		wantChange []bool // whether each observation reached its threshold
	}{
		{"defaults: 1 success, 3 failures", 0, 0,
			[]result{failure, failure, failure, failure, success, failure},
			[]bool{false, false, true, true, true, false}},
		{"success threshold 2", 2, 1,
			[]result{success, success, failure, success, success, success},
			[]bool{false, true, true, false, true, true}},
		{"a success resets the failure run", 1, 2,
			[]result{failure, success, failure, failure},
			[]bool{false, true, false, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &corev1.Probe{SuccessThreshold: tt.successes, FailureThreshold: tt.failures}
			var c counter
			for i, r := range tt.in {
				if got := c.observe(r, p); got != tt.wantChange[i] {
					t.Errorf("observation %d (%v) = %v, want %v", i, r, got, tt.wantChange[i])
				}
			}
		})
	}
}

func TestInitialResultsAndStops(t *testing.T) {
	if initialResult(readiness) != failure || initialResult(liveness) != success || initialResult(startup) != unknown {
		t.Error("initial results: want readiness failure, liveness success, startup unknown")
	}
	for _, tt := range []struct {
		typ  probeType
		r    result
		want bool
	}{
		{liveness, failure, true}, {liveness, success, false},
		{readiness, failure, false}, {readiness, success, false},
		{startup, success, true}, {startup, failure, true},
	} {
		if got := stopsAfter(tt.typ, tt.r); got != tt.want {
			t.Errorf("stopsAfter(%v, %v) = %v, want %v", tt.typ, tt.r, got, tt.want)
		}
	}
}

func TestTimingDefaults(t *testing.T) {
	d, p, to := timing(&corev1.Probe{})
	if d != 0 || p != 10*time.Second || to != time.Second {
		t.Errorf("timing(zero) = %v, %v, %v; want 0s, 10s, 1s", d, p, to)
	}
	d, p, to = timing(&corev1.Probe{InitialDelaySeconds: 5, PeriodSeconds: 2, TimeoutSeconds: 3})
	if d != 5*time.Second || p != 2*time.Second || to != 3*time.Second {
		t.Errorf("timing = %v, %v, %v; want 5s, 2s, 3s", d, p, to)
	}
}
