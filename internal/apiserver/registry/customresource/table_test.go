package customresource

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestColumns(t *testing.T) {
	type column struct {
		name, typ string
		priority  int32
	}
	tests := []struct {
		version string
		want    []column
	}{
		{version: "v1", want: []column{
			{"Name", "string", 0}, {"Replicas", "integer", 0}, {"Color", "string", 0},
			{"Ports", "string", 1}, {"Built", "date", 0}, {"Age", "date", 0},
		}},
		// Without printer columns, upstream's default: the name and the age.
		{version: "v2", want: []column{{"Name", "string", 0}, {"Age", "date", 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			var got []column
			for _, c := range widgets(t, tt.version).Columns {
				got = append(got, column{c.Name, c.Type, c.Priority})
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Columns = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRow(t *testing.T) {
	now := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		version string
		spec    string
		want    []interface{}
	}{
		{
			name: "every column type", version: "v1",
			spec: "{replicas: 3, color: red, ports: [{name: a, port: 80}], builtAt: '2026-01-02T10:00:00Z'}",
			want: []interface{}{"w", int64(3), "red", `[{"name":"a","port":80}]`, "120m", "3d"},
		},
		{
			name: "absent values are empty cells", version: "v1",
			spec: "{}",
			want: []interface{}{"w", nil, nil, nil, nil, "3d"},
		},
		{
			name: "a value of another type is an empty cell, a bad date is <invalid>", version: "v1",
			spec: "{replicas: many, builtAt: yesterday}",
			want: []interface{}{"w", nil, nil, nil, "<invalid>", "3d"},
		},
		{
			name: "default table", version: "v2",
			want: []interface{}{"w", "3d"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := widgets(t, tt.version)
			obj := widget(t, tt.spec, "")
			obj.SetCreationTimestamp(metav1.NewTime(now.Add(-72 * time.Hour)))
			got := res.Row(obj, now)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Row = %#v, want %#v", got, tt.want)
			}
			if len(got) != len(res.Columns) {
				t.Errorf("Row has %d cells for %d columns", len(got), len(res.Columns))
			}
		})
	}
}
