package server

import "testing"

func TestMemberNode(t *testing.T) {
	for member, node := range map[string]string{
		"node-a-0123abcd": "node-a",
		"x-deadbeef":      "x",
		"orch":            "",
		"node-a-123":      "",
	} {
		if got := memberNode(member); got != node {
			t.Errorf("memberNode(%q) = %q, want %q", member, got, node)
		}
	}
}

func TestSamePeer(t *testing.T) {
	if !samePeer([]string{"https://10.0.0.1:2380"}, "https://10.0.0.1:2380") {
		t.Error("same URL is not the same peer")
	}
	if samePeer([]string{"http://127.0.0.1:2380"}, "https://10.0.0.1:2380") {
		t.Error("a loopback peer URL counts as the node's")
	}
	if samePeer(nil, "https://10.0.0.1:2380") {
		t.Error("no URL counts as the same peer")
	}
}
