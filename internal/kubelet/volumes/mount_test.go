package volumes

import (
	"strings"
	"testing"
)

func TestMountPoint(t *testing.T) {
	line := `42 27 0:39 / /var/lib/my\040dir\134x rw,relatime - tmpfs tmpfs rw,size=1024k`
	if mp, ok := mountPoint(line); !ok || mp != `/var/lib/my dir\x` {
		t.Errorf("mountPoint = %q, %v", mp, ok)
	}
	if _, ok := mountPoint("short line"); ok {
		t.Error("mountPoint of a short line")
	}
}

// FuzzMountPoint: mountinfo lines never panic the parser, and a path
// without escapes comes back as it is.
func FuzzMountPoint(f *testing.F) {
	f.Add(`42 27 0:39 / /tmp/a\040b rw - tmpfs tmpfs rw`)
	f.Add(`1 2 3 4 \`)
	f.Add(`1 2 3 4 \12`)
	f.Add(`1 2 3 4 \777`)
	f.Fuzz(func(t *testing.T, line string) {
		mp, ok := mountPoint(line)
		if !ok {
			return
		}
		if fields := strings.Fields(line); !strings.Contains(fields[4], `\`) && mp != fields[4] {
			t.Errorf("mountPoint(%q) = %q, want %q", line, mp, fields[4])
		}
		if len(mp) > len(line) {
			t.Errorf("mountPoint(%q) = %q grew", line, mp)
		}
	})
}
