package controller

import (
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

func TestExpectationsCreations(t *testing.T) {
	e := NewExpectations(testingclock.NewFakeClock(time.Now()))
	if !e.Satisfied("ns/a") {
		t.Fatal("no expectations must be satisfied")
	}
	e.Expect("ns/a", 2, nil)
	e.CreationObserved("ns/a")
	if e.Satisfied("ns/a") {
		t.Fatal("one creation still pending")
	}
	e.CreationObserved("ns/a")
	if !e.Satisfied("ns/a") {
		t.Fatal("all creations seen")
	}
}

func TestExpectationsDeletions(t *testing.T) {
	e := NewExpectations(testingclock.NewFakeClock(time.Now()))
	e.Expect("ns/a", 0, []string{"ns/p1", "ns/p2"})
	e.DeletionObserved("ns/a", "ns/p1")
	e.DeletionObserved("ns/a", "ns/p1") // the same pod twice counts once
	e.DeletionObserved("ns/a", "ns/other")
	if creates, deletes := e.Pending("ns/a"); creates != 0 || deletes != 1 {
		t.Fatalf("pending %d creates, %d deletes; want 0 and 1", creates, deletes)
	}
	if e.Satisfied("ns/a") {
		t.Fatal("p2's deletion still pending")
	}
	e.DeletionObserved("ns/a", "ns/p2")
	if !e.Satisfied("ns/a") {
		t.Fatal("all deletions seen")
	}
}

func TestExpectationsExpireAndForget(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	e := NewExpectations(clk)
	e.Expect("ns/a", 1, []string{"ns/p1"})
	e.Expect("ns/b", 1, nil)
	e.Expect("ns/b", 0, nil) // a new Expect replaces the old one
	if !e.Satisfied("ns/b") {
		t.Fatal("replaced expectations must be satisfied")
	}
	clk.Step(ExpectationsTimeout)
	if e.Satisfied("ns/a") {
		t.Fatal("expectations exactly at the timeout are still pending")
	}
	clk.Step(time.Second)
	if !e.Satisfied("ns/a") {
		t.Fatal("expired expectations must be satisfied")
	}
	e.Forget("ns/a")
	if creates, deletes := e.Pending("ns/a"); creates != 0 || deletes != 0 {
		t.Fatalf("pending after Forget: %d %d", creates, deletes)
	}
	e.CreationObserved("ns/unknown") // observing an unknown key is harmless
	e.DeletionObserved("ns/unknown", "ns/p")
}
