package node

import (
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func thresholdStringsOf(ts []Threshold) []string {
	out := []string{}
	for _, t := range ts {
		out = append(out, t.String())
	}
	return out
}

func TestParseEvictionHard(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want []string
	}{
		{[]string{DefaultEvictionHardFlag}, []string{"memory.available<100Mi", "nodefs.available<10%", "nodefs.inodesFree<5%", "imagefs.available<15%", "imagefs.inodesFree<5%"}},
		{[]string{"memory.available<500Mi,nodefs.available<10%,pid.available<5%"}, []string{"memory.available<500Mi", "nodefs.available<10%", "pid.available<5%"}},
		{[]string{"memory.available<1Gi", " nodefs.inodesFree < 2.5% "}, []string{"memory.available<1Gi", "nodefs.inodesFree<2.5%"}},
		{[]string{"imagefs.inodesFree<100k"}, []string{"imagefs.inodesFree<100k"}},
		{[]string{"memory.available<0%,nodefs.available<100%,pid.available<1000"}, []string{"pid.available<1k"}},
		{[]string{""}, []string{}},
		{nil, []string{}},
	} {
		got, err := ParseEvictionHard(tc.in)
		if err != nil {
			t.Errorf("ParseEvictionHard(%q): %v", tc.in, err)
			continue
		}
		if got == nil {
			t.Errorf("ParseEvictionHard(%q) = nil, want a non-nil slice (nil means the defaults)", tc.in)
		}
		if s := thresholdStringsOf(got); !reflect.DeepEqual(s, tc.want) {
			t.Errorf("ParseEvictionHard(%q) = %q, want %q", tc.in, s, tc.want)
		}
	}

	for in, wantErr := range map[string]string{
		"memory.available":                          `--eviction-hard "memory.available": not of the form signal<quantity or signal<percent% (e.g. memory.available<500Mi`,
		"memory.available>100Mi":                    "not of the form signal<quantity",
		"memory.free<100Mi":                         `signal "memory.free" is not supported by orch (it measures memory.available, nodefs.available`,
		"containerfs.available<10%":                 `signal "containerfs.available" is not supported by orch`,
		"memory.available<lots":                     `"lots" is neither a quantity (e.g. 500Mi) nor a percentage (e.g. 10%)`,
		"memory.available<-1Mi":                     "threshold -1Mi must be positive",
		"memory.available<0":                        "threshold 0 must be positive",
		"nodefs.available<x%":                       `"x%" is not a percentage`,
		"nodefs.available<150%":                     "percentage 150% is not between 0% and 100%",
		"nodefs.available<-5%":                      "percentage -5% is not between 0% and 100%",
		"memory.available<1Gi,memory.available<2Gi": `--eviction-hard "memory.available<2Gi": signal memory.available is given twice`,
	} {
		_, err := ParseEvictionHard([]string{in})
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("ParseEvictionHard(%q) = %v, want an error containing %q", in, err, wantErr)
		}
	}
}

func TestThresholdMet(t *testing.T) {
	ts, err := ParseEvictionHard([]string{"memory.available<100Mi,nodefs.available<10%"})
	if err != nil {
		t.Fatal(err)
	}
	memory, nodefs := ts[0], ts[1]
	for _, tc := range []struct {
		t    Threshold
		o    Observation
		want bool
	}{
		{memory, Observation{Available: 99 << 20, Capacity: 4 << 30}, true},
		{memory, Observation{Available: 100 << 20, Capacity: 4 << 30}, false}, // below, not at
		{memory, Observation{Available: 0, Capacity: 4 << 30}, true},
		{nodefs, Observation{Available: 9, Capacity: 100}, true},
		{nodefs, Observation{Available: 10, Capacity: 100}, false},
		{nodefs, Observation{Available: 50 << 30, Capacity: 100 << 30}, false},
	} {
		if got := tc.t.Met(tc.o); got != tc.want {
			t.Errorf("%s met by %+v = %v, want %v", tc.t, tc.o, got, tc.want)
		}
	}
}

// TestPressureTracker: a condition turns True when one of its thresholds
// is met and stays True for the transition period after the last time
// one was; a signal not measured meets nothing.
func TestPressureTracker(t *testing.T) {
	ts, err := ParseEvictionHard([]string{"memory.available<100Mi,nodefs.available<10%,imagefs.available<15%,pid.available<5%"})
	if err != nil {
		t.Fatal(err)
	}
	p := newPressureTracker(ts, 5*time.Minute)
	fine := Observations{
		SignalMemoryAvailable:  {Available: 2 << 30, Capacity: 4 << 30},
		SignalNodeFsAvailable:  {Available: 50, Capacity: 100},
		SignalImageFsAvailable: {Available: 50, Capacity: 100},
		SignalPIDAvailable:     {Available: 30000, Capacity: 32768},
	}
	lowMemory := Observations{SignalMemoryAvailable: {Available: 50 << 20, Capacity: 4 << 30}}
	lowImageFs := Observations{SignalImageFsAvailable: {Available: 14, Capacity: 100}}
	tasks := Observations{SignalPIDAvailable: {Available: 1000, Capacity: 32768}}

	steps := []struct {
		at   time.Duration
		obs  Observations
		want Pressure
		met  int
	}{
		{0, fine, Pressure{}, 0},
		{10 * time.Second, Observations{}, Pressure{}, 0}, // nothing measured
		{20 * time.Second, lowMemory, Pressure{corev1.NodeMemoryPressure: true}, 1},
		{30 * time.Second, fine, Pressure{corev1.NodeMemoryPressure: true}, 0},
		{40 * time.Second, lowImageFs, Pressure{corev1.NodeMemoryPressure: true, corev1.NodeDiskPressure: true}, 1},
		{20*time.Second + 5*time.Minute - time.Nanosecond, fine, Pressure{corev1.NodeMemoryPressure: true, corev1.NodeDiskPressure: true}, 0},
		{20*time.Second + 5*time.Minute, tasks, Pressure{corev1.NodeDiskPressure: true, corev1.NodePIDPressure: true}, 1},
		{40*time.Second + 5*time.Minute, fine, Pressure{corev1.NodePIDPressure: true}, 0},
		{20*time.Second + 10*time.Minute, fine, Pressure{}, 0},
	}
	for _, s := range steps {
		got, met := p.observe(s.obs, t0.Add(s.at))
		if !reflect.DeepEqual(got, s.want) || len(met) != s.met {
			t.Errorf("at +%v: pressure %v, %d thresholds met; want %v, %d", s.at, got, len(met), s.want, s.met)
		}
	}
}
