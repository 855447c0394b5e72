package framework

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Code is the outcome of a plugin.
type Code int

// The codes, as upstream's.
const (
	// Success: the node passes (a nil *Status means Success too).
	Success Code = iota
	// Error: something went wrong that is not the pod's or the node's fault.
	Error
	// Unschedulable: the node does not fit, but preemption may make it fit.
	Unschedulable
	// UnschedulableAndUnresolvable: the node does not fit and preemption
	// cannot help.
	UnschedulableAndUnresolvable
	// Skip: the plugin has nothing to do for this pod (PreFilter, PreScore).
	Skip
)

// Status is the result of a plugin: a code and the reasons users read.
type Status struct {
	Code    Code
	Reasons []string
	// Plugin names the plugin that failed.
	Plugin string
}

// NewStatus builds a status.
func NewStatus(code Code, reasons ...string) *Status {
	return &Status{Code: code, Reasons: reasons}
}

// CodeOf returns the code of s (Success for nil).
func (s *Status) CodeOf() Code {
	if s == nil {
		return Success
	}
	return s.Code
}

// IsSuccess tells a nil or Success status.
func (s *Status) IsSuccess() bool { return s.CodeOf() == Success }

// IsRejected tells Unschedulable and UnschedulableAndUnresolvable.
func (s *Status) IsRejected() bool {
	c := s.CodeOf()
	return c == Unschedulable || c == UnschedulableAndUnresolvable
}

// Message joins the reasons.
func (s *Status) Message() string {
	if s == nil {
		return ""
	}
	return strings.Join(s.Reasons, ", ")
}

// Diagnosis tells why a pod fits no node.
type Diagnosis struct {
	// NodeToStatus holds the status of each node that was rejected.
	NodeToStatus map[string]*Status
	// UnschedulablePlugins names the plugins that rejected nodes.
	UnschedulablePlugins map[string]bool
	// AbsentStatus is the status of the nodes PreFilters ruled out.
	AbsentStatus *Status
	// PreFilterMsg is set when a PreFilter plugin rejected the pod as a whole.
	PreFilterMsg string
	// PostFilterMsg is what preemption adds ("preemption: ...").
	PostFilterMsg string
}

func (d *Diagnosis) set(node string, s *Status) {
	if d.NodeToStatus == nil {
		d.NodeToStatus = map[string]*Status{}
	}
	d.NodeToStatus[node] = s
	if d.UnschedulablePlugins == nil {
		d.UnschedulablePlugins = map[string]bool{}
	}
	if s.Plugin != "" {
		d.UnschedulablePlugins[s.Plugin] = true
	}
}

// FitError is returned by Schedule when no node fits the pod.
type FitError struct {
	Pod         *v1.Pod
	NumAllNodes int
	Diagnosis   Diagnosis
}

// Error reads like upstream's: "0/3 nodes are available: 1 Insufficient
// cpu, 2 node(s) had untolerated taint {k: v}. preemption: ...".
func (f *FitError) Error() string {
	msg := fmt.Sprintf("0/%d nodes are available:", f.NumAllNodes)
	if f.Diagnosis.PreFilterMsg != "" {
		msg += " " + f.Diagnosis.PreFilterMsg + "."
	} else if h := histogram(f.Diagnosis.NodeToStatus, f.NumAllNodes, f.Diagnosis.AbsentStatus); h != "" {
		msg += " " + h + "."
	}
	if f.Diagnosis.PostFilterMsg != "" {
		msg += " " + f.Diagnosis.PostFilterMsg
	}
	return msg
}

// histogram counts each reason over the nodes ("2 Insufficient cpu"),
// sorted as strings; nodes without a status count under absent.
func histogram(statuses map[string]*Status, numAll int, absent *Status) string {
	counts := map[string]int{}
	for _, s := range statuses {
		for _, r := range s.Reasons {
			counts[r]++
		}
	}
	if absent != nil && len(statuses) < numAll {
		for _, r := range absent.Reasons {
			counts[r] += numAll - len(statuses)
		}
	}
	var parts []string
	for r, n := range counts {
		parts = append(parts, fmt.Sprintf("%d %s", n, r))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
