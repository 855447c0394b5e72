package prober

// The results the pod workers ask for, by container ID. A container the
// Manager does not know (it has no probes, or Sync has not seen it) is
// started, ready and alive.

// Started reports whether a container passed its startup probe (true when
// it has none).
func (m *Manager) Started(containerID string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	in := m.byID[containerID]
	return in == nil || in.started()
}

// Ready reports a container's readiness: false until it started, then the
// result of its readiness probe (false until the probe first succeeded
// successThreshold times), or true when it has no readiness probe.
func (m *Manager) Ready(containerID string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	in := m.byID[containerID]
	if in == nil {
		return true
	}
	w := in.workers[readiness]
	return in.started() && (w == nil || w.result == success)
}

// LivenessFailed reports whether a container failed its liveness probe or
// its startup probe failureThreshold times in a row: the caller is to kill
// and restart it (StartupFailed tells which probe it was).
func (m *Manager) LivenessFailed(containerID string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	in := m.byID[containerID]
	return in != nil && (in.failed(liveness) || in.failed(startup))
}

// StartupFailed reports whether a container failed its startup probe
// failureThreshold times in a row (upstream's kill message then says
// "failed startup probe" rather than "failed liveness probe").
func (m *Manager) StartupFailed(containerID string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	in := m.byID[containerID]
	return in != nil && in.failed(startup)
}

// LivenessGracePeriod returns the terminationGracePeriodSeconds of the
// probe a container failed (liveness first, then startup), which replaces
// the pod's when the caller kills it; nil when the probe sets none or the
// container failed no probe.
func (m *Manager) LivenessGracePeriod(containerID string) *int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	in := m.byID[containerID]
	if in == nil {
		return nil
	}
	for _, t := range []probeType{liveness, startup} {
		if in.failed(t) {
			return in.workers[t].spec.TerminationGracePeriodSeconds
		}
	}
	return nil
}

// started reports whether in has no startup probe or passed it. m.mu is held.
func (in *instance) started() bool {
	w := in.workers[startup]
	return w == nil || w.result == success
}

// failed reports whether in's probe of type t failed. m.mu is held.
func (in *instance) failed(t probeType) bool {
	w := in.workers[t]
	return w != nil && w.result == failure
}
