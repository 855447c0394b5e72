package podautoscaler

import (
	"reflect"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/utils/ptr"
)

// rules is scaling rules with a Pods policy of pods per podsPeriod and a
// Percent policy of percent per percentPeriod (each left out when 0), the
// Max select policy and a stabilization window of window seconds.
func rules(pods, podsPeriod, percent, percentPeriod, window int32) *autoscalingv2.HPAScalingRules {
	r := &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To(window), SelectPolicy: ptr.To(autoscalingv2.MaxChangePolicySelect)}
	if pods != 0 {
		r.Policies = append(r.Policies, autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PodsScalingPolicy, Value: pods, PeriodSeconds: podsPeriod})
	}
	if percent != 0 {
		r.Policies = append(r.Policies, autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PercentScalingPolicy, Value: percent, PeriodSeconds: percentPeriod})
	}
	return r
}

// spread puts the changes at the middles of equal slices of the last
// period seconds before testNow, oldest first.
func spread(period int, changes ...int32) []scaleEvent {
	slice := time.Duration(period) * time.Second / time.Duration(len(changes))
	out := make([]scaleEvent, len(changes))
	for i, c := range changes {
		out[i] = scaleEvent{change: c, at: testNow.Add(-time.Duration(period)*time.Second + slice*time.Duration(i) + slice/2)}
	}
	return out
}

func TestLimitWithBehavior(t *testing.T) {
	for _, tc := range []struct {
		name              string
		ups, downs        []scaleEvent
		min, max          int32
		up, down          *autoscalingv2.HPAScalingRules
		current, desired  int32
		want              int32
		wantReason        string
		selectUp, selDown autoscalingv2.ScalingPolicySelect
	}{
		{name: "within range", current: 5, desired: 7, min: 3, max: 8, want: 7, wantReason: reasonDesiredWithinRange},
		{name: "below minReplicas", current: 3, desired: 1, min: 2, max: 8, want: 2, wantReason: reasonTooFewReplicas},
		{name: "maxReplicas below the scale-up limit", current: 20, desired: 1000, min: 1, max: 10, want: 10, wantReason: reasonTooManyReplicas},
		{name: "maxReplicas", current: 100, desired: 1000, min: 100, max: 150, want: 150, wantReason: reasonTooManyReplicas},
		{name: "user percent policy", current: 3, desired: 1000, min: 1, max: 2000, up: rules(0, 0, 1, 60, 0), want: 4, wantReason: reasonScaleUpLimit},
		{name: "default scale-up: 100% beats 4 pods", current: 10, desired: 50, min: 1, max: 1000, want: 20, wantReason: reasonScaleUpLimit},
		{name: "default scale-up: 4 pods beat 100%", current: 1, desired: 50, min: 1, max: 1000, want: 5, wantReason: reasonScaleUpLimit},
		{name: "pods policy larger than percent", current: 10, desired: 500, min: 1, max: 1000, up: rules(100, 60, 100, 60, 0), want: 110, wantReason: reasonScaleUpLimit},
		{name: "percent policy larger than pods", current: 10, desired: 500, min: 1, max: 1000, up: rules(2, 60, 100, 60, 0), want: 20, wantReason: reasonScaleUpLimit},
		{name: "Min select policy up", current: 10, desired: 500, min: 1, max: 1000, up: rules(2, 60, 100, 60, 0), selectUp: autoscalingv2.MinChangePolicySelect, want: 12, wantReason: reasonScaleUpLimit},
		{name: "scale-up disabled", current: 10, desired: 500, min: 1, max: 1000, up: rules(2, 60, 100, 60, 0), selectUp: autoscalingv2.DisabledPolicySelect, want: 10, wantReason: reasonScaleUpLimit},
		{name: "scale-down percent beats pods", current: 100, desired: 2, min: 1, max: 1000, down: rules(20, 60, 1, 60, 300), want: 80, wantReason: reasonScaleDownLimit},
		{name: "scale-down pods beat percent", current: 100, desired: 2, min: 1, max: 1000, down: rules(2, 60, 1, 60, 300), want: 98, wantReason: reasonScaleDownLimit},
		{name: "Min select policy down", current: 100, desired: 2, min: 1, max: 1000, down: rules(20, 60, 1, 60, 300), selDown: autoscalingv2.MinChangePolicySelect, want: 99, wantReason: reasonScaleDownLimit},
		{name: "scale-down disabled", current: 100, desired: 2, min: 1, max: 1000, down: rules(20, 60, 1, 60, 300), selDown: autoscalingv2.DisabledPolicySelect, want: 100, wantReason: reasonScaleDownLimit},
		{name: "minReplicas beats a large pods policy", current: 10, desired: 0, min: 1, max: 1000, down: rules(100, 60, 0, 0, 300), want: 1, wantReason: reasonTooFewReplicas},
		{name: "scale-down percent within range", current: 10, desired: 5, min: 1, max: 1000, down: rules(0, 0, 50, 60, 300), want: 5, wantReason: reasonDesiredWithinRange},
		// With recent events.
		{name: "maxReplicas with events", ups: spread(120, 1, 5, 9), current: 100, desired: 500, min: 1, max: 200, up: rules(300, 60, 0, 0, 0), want: 200, wantReason: reasonTooManyReplicas},
		{name: "recent scale-ups leave no room", ups: spread(120, 1, 5, 9), current: 100, desired: 500, min: 1, max: 1000, up: rules(5, 120, 0, 0, 0), want: 100, wantReason: reasonScaleUpLimit},
		{name: "pods policy counts from the period's start", ups: spread(120, 1, 5, 9), current: 100, desired: 500, min: 1, max: 1000, up: rules(150, 120, 0, 0, 0), want: 235, wantReason: reasonScaleUpLimit},
		{name: "percent policy counts from the period's start", ups: spread(120, 1, 5, 9), current: 100, desired: 500, min: 1, max: 1000, up: rules(0, 0, 200, 120, 0), want: 255, wantReason: reasonScaleUpLimit},
		{name: "scale-ups and downs both move the start", ups: spread(120, 4), downs: spread(120, 2), current: 6, desired: 24, min: 1, max: 1000, up: rules(0, 0, 300, 300, 0), want: 16, wantReason: reasonScaleUpLimit},
		{name: "scale-down pods policy with events", downs: spread(120, 1, 5, 9), current: 100, desired: 2, min: 1, max: 1000, down: rules(5, 120, 0, 0, 300), want: 100, wantReason: reasonScaleDownLimit},
		{name: "scale-down percent policy with events", downs: spread(120, 2, 4, 6), current: 100, desired: 0, min: 1, max: 1000, down: rules(0, 0, 50, 120, 300), want: 56, wantReason: reasonScaleDownLimit},
		{name: "scale-down with both kinds of events", ups: spread(120, 2), downs: spread(120, 4), current: 10, desired: 1, min: 1, max: 1000, down: rules(0, 0, 50, 180, 0), want: 6, wantReason: reasonScaleDownLimit},
		{name: "events older than the period do not count", ups: spread(120, 8, 12, 9, 11), current: 100, desired: 200, min: 1, max: 1000, up: rules(1000, 60, 0, 0, 0), want: 200, wantReason: reasonDesiredWithinRange},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: tc.up, ScaleDown: tc.down}
			if tc.selectUp != "" {
				b.ScaleUp.SelectPolicy = &tc.selectUp
			}
			if tc.selDown != "" {
				b.ScaleDown.SelectPolicy = &tc.selDown
			}
			up, down := effectiveRules(b, 5*time.Minute)
			n := normalization{up: up, down: down, min: tc.min, max: tc.max, current: tc.current, desired: tc.desired}
			got, reason, _ := limitWithBehavior(n, tc.ups, tc.downs, testNow)
			if got != tc.want || reason != tc.wantReason {
				t.Errorf("got %d (%s), want %d (%s)", got, reason, tc.want, tc.wantReason)
			}
		})
	}
}

func TestLimitLegacy(t *testing.T) {
	for _, tc := range []struct {
		name                       string
		current, desired, min, max int32
		want                       int32
		wantReason                 string
	}{
		{"within range", 5, 7, 3, 8, 7, reasonDesiredWithinRange},
		{"below minReplicas", 3, 1, 2, 8, 2, reasonTooFewReplicas},
		{"above maxReplicas", 5, 12, 2, 8, 8, reasonTooManyReplicas},
		{"at most twice the replicas", 5, 50, 1, 100, 10, reasonScaleUpLimit},
		{"at least 4", 1, 50, 1, 100, 4, reasonScaleUpLimit},
		{"maxReplicas below the limit", 20, 1000, 1, 10, 10, reasonTooManyReplicas},
	} {
		got, reason, _ := limitLegacy(tc.current, tc.desired, tc.min, tc.max)
		if got != tc.want || reason != tc.wantReason {
			t.Errorf("%s: got %d (%s), want %d (%s)", tc.name, got, reason, tc.want, tc.wantReason)
		}
	}
}

func TestStabilizeLegacy(t *testing.T) {
	ago := func(d time.Duration) time.Time { return testNow.Add(-d) }
	for _, tc := range []struct {
		name    string
		recs    []recommendation
		desired int32
		want    int32
		wantLen int
	}{
		{"no history", nil, 5, 5, 1},
		{"a higher recent recommendation holds", []recommendation{{4, ago(2 * time.Minute)}, {5, ago(time.Minute)}}, 3, 5, 3},
		{"lower recent recommendations", []recommendation{{1, ago(2 * time.Minute)}, {2, ago(time.Minute)}}, 3, 3, 3},
		{"old recommendations do not hold, and make room", []recommendation{{10, ago(10 * time.Minute)}, {9, ago(9 * time.Minute)}}, 3, 3, 2},
		{"old and recent", []recommendation{{10, ago(10 * time.Minute)}, {4, ago(time.Minute)}, {5, ago(2 * time.Minute)}, {9, ago(9 * time.Minute)}}, 3, 5, 4},
	} {
		got, recs := stabilizeLegacy(tc.recs, tc.desired, 5*time.Minute, testNow)
		if got != tc.want || len(recs) != tc.wantLen {
			t.Errorf("%s: got %d with %d recommendations, want %d with %d", tc.name, got, len(recs), tc.want, tc.wantLen)
		}
	}
}

func TestStabilizeWithBehavior(t *testing.T) {
	ago := func(d time.Duration) time.Time { return testNow.Add(-d) }
	for _, tc := range []struct {
		name             string
		recs             []recommendation
		current, desired int32
		upWindow         int32
		downWindow       int32
		want             int32
		wantReason       string
		wantRecs         []int32 // the recommendations afterwards
	}{
		{name: "no history", current: 100, desired: 5, want: 5, wantReason: reasonScaleDownStable, wantRecs: []int32{5}},
		{name: "scale-down stabilized", recs: []recommendation{{4, ago(2 * time.Minute)}, {5, ago(time.Minute)}},
			current: 100, desired: 3, downWindow: 180, want: 5, wantReason: reasonScaleDownStable, wantRecs: []int32{4, 5, 3}},
		{name: "scale-up stabilized", recs: []recommendation{{4, ago(2 * time.Minute)}, {5, ago(time.Minute)}},
			current: 1, desired: 7, upWindow: 300, want: 4, wantReason: reasonScaleUpStabilized, wantRecs: []int32{4, 5, 7}},
		{name: "no scale-down window", recs: []recommendation{{1, ago(2 * time.Minute)}, {2, ago(time.Minute)}},
			current: 100, desired: 3, upWindow: 300, want: 3, wantRecs: []int32{1, 2, 3}},
		{name: "old recommendation reused", recs: []recommendation{{10, ago(10 * time.Minute)}, {9, ago(9 * time.Minute)}},
			current: 100, desired: 3, want: 3, wantRecs: []int32{10, 3}},
		{name: "only what is old for both windows is reused", recs: []recommendation{{10, ago(100 * time.Minute)}, {6, ago(time.Minute)}, {5, ago(2 * time.Minute)}, {9, ago(3 * time.Minute)}},
			current: 1, desired: 100, upWindow: 300, downWindow: 300, want: 5, wantReason: reasonScaleUpStabilized, wantRecs: []int32{100, 6, 5, 9}},
		{name: "no scale-up when the recommendation goes down", recs: []recommendation{{2, ago(100 * time.Minute)}, {3, ago(3 * time.Minute)}},
			current: 2, desired: 1, upWindow: 300, downWindow: 300, want: 2, wantReason: reasonScaleDownStable, wantRecs: []int32{1, 3}},
		{name: "no scale-down when the recommendation goes up", recs: []recommendation{{2, ago(100 * time.Minute)}, {1, ago(3 * time.Minute)}},
			current: 2, desired: 3, upWindow: 300, downWindow: 300, want: 2, wantReason: reasonScaleUpStabilized, wantRecs: []int32{3, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up, down := effectiveRules(&autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleUp: rules(4, 15, 100, 15, tc.upWindow), ScaleDown: rules(0, 0, 100, 15, tc.downWindow)}, 5*time.Minute)
			n := normalization{up: up, down: down, min: 1, max: 1000, current: tc.current, desired: tc.desired}
			got, reason, _, recs := stabilizeWithBehavior(tc.recs, n, testNow)
			if got != tc.want || (got != tc.desired && reason != tc.wantReason) {
				t.Errorf("got %d (%s), want %d (%s)", got, reason, tc.want, tc.wantReason)
			}
			var values []int32
			for _, r := range recs {
				values = append(values, r.replicas)
			}
			if !reflect.DeepEqual(values, tc.wantRecs) {
				t.Errorf("recommendations %v, want %v", values, tc.wantRecs)
			}
		})
	}
}

func TestRecordScaleEvent(t *testing.T) {
	ago := func(s int) time.Time { return testNow.Add(-time.Duration(s) * time.Second) }
	events := []scaleEvent{{8, ago(29), false}, {6, ago(59), false}, {7, ago(61), false}, {9, ago(61), false}}
	got := recordScaleEvent(events, 5, 60, testNow)
	want := []scaleEvent{{8, ago(29), false}, {6, ago(59), false}, {7, ago(61), true}, {5, testNow, false}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events %+v, want %+v", got, want)
	}
	if n := changeInPeriod(60, got, testNow); n != 19 {
		t.Errorf("change in the last minute %d, want 19", n)
	}
	if got := recordScaleEvent(nil, 3, 60, testNow); len(got) != 1 || got[0].change != 3 {
		t.Errorf("first event: %+v", got)
	}
}

func TestEffectiveRules(t *testing.T) {
	up, down := effectiveRules(nil, 5*time.Minute)
	if *up.StabilizationWindowSeconds != 0 || *up.SelectPolicy != autoscalingv2.MaxChangePolicySelect || len(up.Policies) != 2 {
		t.Errorf("default scale-up %+v", up)
	}
	if *down.StabilizationWindowSeconds != 300 || len(down.Policies) != 1 || down.Policies[0].Value != 100 {
		t.Errorf("default scale-down %+v", down)
	}
	// A behavior as the apiserver stores it leaves the scale-down window
	// to the controller.
	given := &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{
		Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 60}}}}
	_, down = effectiveRules(given, 2*time.Minute)
	if *down.StabilizationWindowSeconds != 120 || *down.SelectPolicy != autoscalingv2.MaxChangePolicySelect || down.Policies[0].Value != 1 {
		t.Errorf("partial scale-down %+v", down)
	}
	if given.ScaleDown.StabilizationWindowSeconds != nil {
		t.Error("effectiveRules changed the behavior it was given")
	}
}
