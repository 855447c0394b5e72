package plugins

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	fw "orch/internal/scheduler/framework"
)

// only builds a framework of the given plugins, each in the roles it has,
// with weight 1.
func only(plugins ...fw.Plugin) *fw.Framework {
	f := &fw.Framework{}
	for _, p := range plugins {
		if pf, ok := p.(fw.PreFilterPlugin); ok {
			f.PreFilters = append(f.PreFilters, pf)
		}
		if pf, ok := p.(fw.FilterPlugin); ok {
			f.Filters = append(f.Filters, pf)
		}
		if ps, ok := p.(fw.PreScorePlugin); ok {
			f.PreScores = append(f.PreScores, ps)
		}
		if s, ok := p.(fw.ScorePlugin); ok {
			f.Scores = append(f.Scores, fw.WeightedScore{Plugin: s, Weight: 1})
		}
	}
	return f
}

// verdicts renders the filter outcome per node: "ok", or the code and the
// reasons ("unschedulable: Insufficient cpu", "unresolvable: ...").
func verdicts(statuses map[string]*fw.Status, nodes []*v1.Node) map[string]string {
	out := map[string]string{}
	for _, n := range nodes {
		st, ok := statuses[n.Name]
		switch {
		case !ok:
			out[n.Name] = "ok"
		case st.Code == fw.Unschedulable:
			out[n.Name] = "unschedulable: " + st.Message()
		case st.Code == fw.UnschedulableAndUnresolvable:
			out[n.Name] = "unresolvable: " + st.Message()
		default:
			out[n.Name] = fmt.Sprintf("code %d: %s", st.Code, st.Message())
		}
	}
	return out
}

// filterOutcome runs plugins' filters for pod over nodes (with pods bound).
func filterOutcome(plugin fw.Plugin, pod *v1.Pod, nodes []*v1.Node, pods ...*v1.Pod) map[string]string {
	st, _ := only(plugin).Evaluate(pod, fw.NewSnapshot(nodes, pods))
	return verdicts(st, nodes)
}

// scores runs one plugin's scoring (normalized) over nodes.
func scores(plugin fw.Plugin, snap *fw.Snapshot, pod *v1.Pod) map[string]int64 {
	_, sc := only(plugin).Evaluate(pod, snap)
	return sc
}

func check[T comparable](t *testing.T, got, want map[string]T) {
	t.Helper()
	var diffs []string
	for k, w := range want {
		if g, ok := got[k]; !ok || g != w {
			diffs = append(diffs, fmt.Sprintf("%s: got %v, want %v", k, g, w))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: got %v, want nothing", k, g))
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Error("\n" + strings.Join(diffs, "\n"))
	}
}
