package node

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Signal is one of upstream's eviction signals: an amount of something
// the node has left.
type Signal string

// The signals orch measures, named as upstream's.
const (
	SignalMemoryAvailable   Signal = "memory.available"   // bytes: memory capacity less the root cgroup's working set
	SignalNodeFsAvailable   Signal = "nodefs.available"   // bytes free for unprivileged users on the kubelet's file system
	SignalNodeFsInodesFree  Signal = "nodefs.inodesFree"  // its free inodes
	SignalImageFsAvailable  Signal = "imagefs.available"  // bytes free on the container runtime's file system
	SignalImageFsInodesFree Signal = "imagefs.inodesFree" // its free inodes
	SignalPIDAvailable      Signal = "pid.available"      // tasks the kernel can still create
)

// signalCondition is the node condition a signal's threshold drives.
var signalCondition = map[Signal]corev1.NodeConditionType{
	SignalMemoryAvailable:   corev1.NodeMemoryPressure,
	SignalNodeFsAvailable:   corev1.NodeDiskPressure,
	SignalNodeFsInodesFree:  corev1.NodeDiskPressure,
	SignalImageFsAvailable:  corev1.NodeDiskPressure,
	SignalImageFsInodesFree: corev1.NodeDiskPressure,
	SignalPIDAvailable:      corev1.NodePIDPressure,
}

// Threshold is a hard eviction threshold: its signal is met when the
// available amount is below Quantity or, when Quantity is nil, below
// Percentage (0 < Percentage < 1) of the capacity.
type Threshold struct {
	Signal     Signal
	Quantity   *resource.Quantity
	Percentage float64
}

// String is the threshold in --eviction-hard syntax.
func (t Threshold) String() string {
	if t.Quantity != nil {
		return string(t.Signal) + "<" + t.Quantity.String()
	}
	return string(t.Signal) + "<" + strconv.FormatFloat(t.Percentage*100, 'f', -1, 64) + "%"
}

// Met reports whether o is below the threshold.
func (t Threshold) Met(o Observation) bool {
	limit := int64(float64(o.Capacity) * t.Percentage)
	if t.Quantity != nil {
		limit = t.Quantity.Value()
	}
	return o.Available < limit
}

// DefaultEvictionHardFlag is upstream's default --eviction-hard on Linux.
const DefaultEvictionHardFlag = "memory.available<100Mi,nodefs.available<10%,nodefs.inodesFree<5%,imagefs.available<15%,imagefs.inodesFree<5%"

// DefaultEvictionHard are the thresholds of DefaultEvictionHardFlag.
func DefaultEvictionHard() []Threshold {
	t, err := ParseEvictionHard([]string{DefaultEvictionHardFlag})
	if err != nil {
		panic(err)
	}
	return t
}

// ParseEvictionHard parses --eviction-hard values: comma-separated
// statements signal<quantity or signal<percent%, as upstream's (e.g.
// memory.available<500Mi,nodefs.available<10%). Empty statements are
// skipped, so the result is empty but not nil for no statements (no
// thresholds); like upstream, a 0% or 100% threshold is ignored.
func ParseEvictionHard(values []string) ([]Threshold, error) {
	thresholds := []Threshold{}
	seen := map[Signal]bool{}
	for _, value := range values {
		for _, stmt := range strings.Split(value, ",") {
			stmt = strings.TrimSpace(stmt)
			if stmt == "" {
				continue
			}
			t, ignored, err := parseThreshold(stmt)
			if err != nil {
				return nil, fmt.Errorf("--eviction-hard %q: %w", stmt, err)
			}
			if seen[t.Signal] {
				return nil, fmt.Errorf("--eviction-hard %q: signal %s is given twice", stmt, t.Signal)
			}
			seen[t.Signal] = true
			if !ignored {
				thresholds = append(thresholds, t)
			}
		}
	}
	return thresholds, nil
}

// parseThreshold parses one statement; ignored says it is 0% or 100%.
func parseThreshold(stmt string) (t Threshold, ignored bool, err error) {
	signal, value, ok := strings.Cut(stmt, "<")
	if !ok {
		return t, false, fmt.Errorf("not of the form signal<quantity or signal<percent%% (e.g. memory.available<500Mi or nodefs.available<10%%)")
	}
	t.Signal, value = Signal(strings.TrimSpace(signal)), strings.TrimSpace(value)
	if _, ok := signalCondition[t.Signal]; !ok {
		return t, false, fmt.Errorf("signal %q is not supported by orch (it measures memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree and pid.available)", signal)
	}
	if pct, ok := strings.CutSuffix(value, "%"); ok {
		p, err := strconv.ParseFloat(pct, 64)
		if err != nil {
			return t, false, fmt.Errorf("%q is not a percentage", value)
		}
		if p < 0 || p > 100 {
			return t, false, fmt.Errorf("percentage %s is not between 0%% and 100%%", value)
		}
		t.Percentage = p / 100
		return t, p == 0 || p == 100, nil
	}
	q, err := resource.ParseQuantity(value)
	if err != nil {
		return t, false, fmt.Errorf("%q is neither a quantity (e.g. 500Mi) nor a percentage (e.g. 10%%)", value)
	}
	if q.Sign() <= 0 {
		return t, false, fmt.Errorf("threshold %s must be positive", value)
	}
	t.Quantity = &q
	return t, false, nil
}

// Observation is a signal's measurement: Available out of Capacity
// (bytes, inodes or tasks).
type Observation struct {
	Available, Capacity int64
}

// Observations are the signals measured in one round; a signal that
// could not be measured is missing and meets no threshold.
type Observations map[Signal]Observation

// Pressure says which of MemoryPressure, DiskPressure and PIDPressure are
// True; the others are False.
type Pressure map[corev1.NodeConditionType]bool

// pressureTracker turns observations into pressure as upstream's eviction
// manager does: a condition is True while one of its thresholds is met
// and for period after the last time one was.
type pressureTracker struct {
	thresholds []Threshold
	period     time.Duration
	lastMet    map[corev1.NodeConditionType]time.Time
}

func newPressureTracker(thresholds []Threshold, period time.Duration) *pressureTracker {
	return &pressureTracker{thresholds: thresholds, period: period, lastMet: map[corev1.NodeConditionType]time.Time{}}
}

// observe records obs measured at now and returns the pressure and the
// thresholds obs meets.
func (p *pressureTracker) observe(obs Observations, now time.Time) (Pressure, []Threshold) {
	var met []Threshold
	for _, t := range p.thresholds {
		if o, ok := obs[t.Signal]; ok && t.Met(o) {
			met = append(met, t)
			p.lastMet[signalCondition[t.Signal]] = now
		}
	}
	pressure := Pressure{}
	for cond, at := range p.lastMet {
		if now.Sub(at) < p.period {
			pressure[cond] = true
		}
	}
	return pressure, met
}
