package node

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestParseTaints(t *testing.T) {
	for _, tc := range []struct {
		in      []string
		want    []corev1.Taint
		wantErr string
	}{
		{in: nil, want: nil},
		{in: []string{"dedicated=gpu:NoSchedule"}, want: []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}},
		{in: []string{"example.com/edge:NoExecute", "a=b:PreferNoSchedule"}, want: []corev1.Taint{
			{Key: "example.com/edge", Effect: corev1.TaintEffectNoExecute},
			{Key: "a", Value: "b", Effect: corev1.TaintEffectPreferNoSchedule}}},
		{in: []string{"a=b:NoSchedule", "a=c:NoExecute"}, want: []corev1.Taint{
			{Key: "a", Value: "b", Effect: corev1.TaintEffectNoSchedule},
			{Key: "a", Value: "c", Effect: corev1.TaintEffectNoExecute}}},
		{in: []string{"dedicated=gpu"}, wantErr: "key=value:Effect"},
		{in: []string{"dedicated=gpu:Sometimes"}, wantErr: `effect "Sometimes"`},
		{in: []string{"dedicated=gpu:noschedule"}, wantErr: `effect "noschedule"`},
		{in: []string{"=gpu:NoSchedule"}, wantErr: `key ""`},
		{in: []string{"bad key=x:NoSchedule"}, wantErr: `key "bad key"`},
		{in: []string{"k=bad value:NoSchedule"}, wantErr: `value "bad value"`},
		{in: []string{"a=b:NoSchedule", "a=c:NoSchedule"}, wantErr: "given twice"},
	} {
		got, err := ParseTaints(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "--node-taint") {
				t.Errorf("ParseTaints(%q) = %v, want an error about --node-taint containing %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseTaints(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseLabels(t *testing.T) {
	for _, tc := range []struct {
		in      []string
		want    map[string]string
		wantErr string
	}{
		{in: nil, want: map[string]string{}},
		{in: []string{"disk=ssd", "example.com/zone=a", "empty="}, want: map[string]string{"disk": "ssd", "example.com/zone": "a", "empty": ""}},
		{in: []string{"disk=ssd", "disk=hdd"}, want: map[string]string{"disk": "hdd"}},
		{in: []string{"disk"}, wantErr: "key=value"},
		{in: []string{"=ssd"}, wantErr: `key ""`},
		{in: []string{"a/b/c=x"}, wantErr: `key "a/b/c"`},
		{in: []string{"disk=not ok"}, wantErr: `value "not ok"`},
		{in: []string{"disk=" + strings.Repeat("x", 64)}, wantErr: "value"},
	} {
		got, err := ParseLabels(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "--node-label") {
				t.Errorf("ParseLabels(%q) = %v, want an error about --node-label containing %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseLabels(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}
