package prober

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"orch/internal/kubelet/metrics"
)

// probeType is the kind of a probe; its String is the word upstream's
// events begin with.
type probeType int

const (
	liveness probeType = iota
	readiness
	startup
	numProbeTypes
)

func (t probeType) String() string {
	switch t {
	case liveness:
		return "Liveness"
	case readiness:
		return "Readiness"
	case startup:
		return "Startup"
	}
	return "UNKNOWN"
}

// spec returns c's probe of type t (nil when it has none).
func (t probeType) spec(c *corev1.Container) *corev1.Probe {
	switch t {
	case liveness:
		return c.LivenessProbe
	case readiness:
		return c.ReadinessProbe
	case startup:
		return c.StartupProbe
	}
	return nil
}

// result is the stored outcome of a probe type for one container.
type result int

const (
	unknown result = iota // startup's value until its threshold is reached
	success
	failure
)

// initialResult is what a worker reports before its probe reached a
// threshold: a container is not ready until its readiness probe succeeds,
// is alive until its liveness probe fails, and is not started until its
// startup probe succeeds.
func initialResult(t probeType) result {
	switch t {
	case readiness:
		return failure
	case liveness:
		return success
	}
	return unknown
}

// outcome is what one run of a handler gave, as upstream's probe.Result.
type outcome string

const (
	outcomeSuccess outcome = "success"
	outcomeWarning outcome = "warning"
	outcomeFailure outcome = "failure"
	outcomeUnknown outcome = "unknown"
)

// metricResult is the result label of prober_probe_total: a warning
// passed.
func (o outcome) metricResult() string {
	switch o {
	case outcomeSuccess, outcomeWarning:
		return metrics.ProbeSuccessful
	case outcomeFailure:
		return metrics.ProbeFailed
	}
	return metrics.ProbeUnknown
}

// event is an event to record on the probed container.
type event struct {
	Type, Reason, Message string
}

// verdict turns a handler's outcome, output and error into the result the
// threshold counter sees (counted is false when an error throws the run
// away, as upstream does) and the event to record, if any, with
// upstream's reasons and wording.
func verdict(t probeType, o outcome, output string, err error) (r result, counted bool, ev *event) {
	if err != nil {
		return failure, false, &event{corev1.EventTypeWarning, "Unhealthy",
			fmt.Sprintf("%s probe errored and resulted in %s state: %s", t, o, err)}
	}
	switch o {
	case outcomeSuccess:
		return success, true, nil
	case outcomeWarning:
		return success, true, &event{corev1.EventTypeWarning, "ProbeWarning", fmt.Sprintf("%s probe warning: %s", t, output)}
	case outcomeFailure:
		return failure, true, &event{corev1.EventTypeWarning, "Unhealthy", fmt.Sprintf("%s probe failed: %s", t, output)}
	}
	return failure, true, nil
}

// counter applies a probe's successThreshold and failureThreshold: the
// stored result changes only after that many equal results in a row.
type counter struct {
	last result
	run  int
}

// observe counts r and reports whether it reached its threshold, so that
// the stored result is to become r.
func (c *counter) observe(r result, p *corev1.Probe) bool {
	if r == c.last {
		c.run++
	} else {
		c.last, c.run = r, 1
	}
	s, f := thresholds(p)
	return (r == success && c.run >= s) || (r == failure && c.run >= f)
}

// reset starts counting afresh (after a result was acted upon).
func (c *counter) reset() { c.run = 0 }

// thresholds returns p's success and failure thresholds, defaulted as the
// API server defaults them (1 and 3) when zero.
func thresholds(p *corev1.Probe) (successes, failures int) {
	successes, failures = int(p.SuccessThreshold), int(p.FailureThreshold)
	if successes <= 0 {
		successes = 1
	}
	if failures <= 0 {
		failures = 3
	}
	return successes, failures
}

// timing returns p's initial delay, period and timeout, defaulted as the
// API server defaults them (0 s, 10 s, 1 s) when zero.
func timing(p *corev1.Probe) (delay, period, timeout time.Duration) {
	delay = time.Duration(max(p.InitialDelaySeconds, 0)) * time.Second
	period = time.Duration(p.PeriodSeconds) * time.Second
	if period <= 0 {
		period = 10 * time.Second
	}
	timeout = time.Duration(p.TimeoutSeconds) * time.Second
	if timeout <= 0 {
		timeout = time.Second
	}
	return delay, period, timeout
}

// stopsAfter reports whether a worker stops probing once its result is
// set to r: a startup probe is done once it succeeded or failed, and a
// failed liveness probe waits for the container to be restarted (a new
// container gets a new worker).
func stopsAfter(t probeType, r result) bool {
	return t == startup || (t == liveness && r == failure)
}
