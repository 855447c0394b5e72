package memory

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestReadOnlyMappingOf(t *testing.T) {
	cases := []struct {
		line string
		ok   bool
	}{
		{"00400000-02400000 r-xp 00000000 fd:01 123 /usr/bin/orch", true},
		{"02400000-03400000 r--p 02000000 fd:01 123 /usr/bin/orch", true},
		{"03400000-03500000 rw-p 03000000 fd:01 123 /usr/bin/orch", false},
		{"03400000-03500000 r--p 03000000 fd:01 124 /usr/bin/other", false},
		{"7ffd0000-7ffd1000 rw-p 00000000 00:00 0 [stack]", false},
		{"garbage", false},
	}
	for _, c := range cases {
		if _, _, ok := readOnlyMappingOf(c.line, "/usr/bin/orch"); ok != c.ok {
			t.Errorf("%q: ok=%v, want %v", c.line, ok, c.ok)
		}
	}
}

// TestShedLowersResidentFilePages runs the real madvise on the test binary:
// its file-backed resident size must drop, and the process keeps running
// (the code it executes next faults back in).
func TestShedLowersResidentFilePages(t *testing.T) {
	before := rssFileKB(t)
	n, err := ShedExecutablePages()
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no read-only mapping of the executable was found")
	}
	after := rssFileKB(t)
	if after >= before {
		t.Fatalf("RssFile %d kB before, %d kB after: nothing was given back", before, after)
	}
	t.Logf("advised %d MB; RssFile %d kB → %d kB", n>>20, before, after)
}

func rssFileKB(t *testing.T) int {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "RssFile:") {
			kb, _ := strconv.Atoi(strings.Fields(line)[1])
			return kb
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}
