package tolerations

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestCovers(t *testing.T) {
	exists := func(key string, effect corev1.TaintEffect) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect}
	}
	equal := func(key, value string, effect corev1.TaintEffect) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpEqual, Value: value, Effect: effect}
	}
	noExecute := func(seconds *int64) corev1.Toleration {
		return corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds}
	}
	tests := []struct {
		name string
		a, t corev1.Toleration
		want bool
	}{
		{"same", equal("k", "v", "NoSchedule"), equal("k", "v", "NoSchedule"), true},
		{"keyless Exists covers any key", exists("", ""), equal("k", "v", "NoExecute"), true},
		{"Exists covers any value of its key", exists("k", ""), equal("k", "v", "NoSchedule"), true},
		{"another key", exists("k", ""), exists("j", ""), false},
		{"any effect covers one", equal("k", "v", ""), equal("k", "v", "NoSchedule"), true},
		{"one effect does not cover any", equal("k", "v", "NoSchedule"), equal("k", "v", ""), false},
		{"Equal does not cover Exists", equal("k", "v", ""), exists("k", ""), false},
		{"another value", equal("k", "v", ""), equal("k", "w", ""), false},
		{"empty operator is Equal", corev1.Toleration{Key: "k", Value: "v"}, equal("k", "v", ""), true},
		{"a shorter NoExecute time covers a longer? no", noExecute(ptr.To[int64](60)), noExecute(ptr.To[int64](300)), false},
		{"a longer NoExecute time covers a shorter", noExecute(ptr.To[int64](300)), noExecute(ptr.To[int64](60)), true},
		{"a timed NoExecute does not cover forever", noExecute(ptr.To[int64](300)), noExecute(nil), false},
		{"forever covers a time", noExecute(nil), noExecute(ptr.To[int64](60)), true},
	}
	for _, tt := range tests {
		if got := Covers(tt.a, tt.t); got != tt.want {
			t.Errorf("%s: Covers = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestMergeAndAllowed(t *testing.T) {
	a := corev1.Toleration{Key: "a", Operator: corev1.TolerationOpEqual, Value: "1", Effect: corev1.TaintEffectNoSchedule}
	anyA := corev1.Toleration{Key: "a", Operator: corev1.TolerationOpExists}
	b := corev1.Toleration{Key: "b", Operator: corev1.TolerationOpExists}
	got := Merge([]corev1.Toleration{a, b}, []corev1.Toleration{anyA, b})
	if len(got) != 2 || got[0] != b || got[1] != anyA {
		t.Errorf("Merge = %+v, want [b, a Exists]: a covered one goes, duplicates once", got)
	}
	if !Allowed([]corev1.Toleration{a, b}, []corev1.Toleration{anyA, b}) || Allowed([]corev1.Toleration{a, b}, []corev1.Toleration{anyA}) {
		t.Error("Allowed does not hold tolerations to the allow-list")
	}
	if !Allowed([]corev1.Toleration{a}, nil) {
		t.Error("an empty allow-list allows everything")
	}
}
