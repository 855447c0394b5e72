// Package memory gives back to the kernel the pages of the orch executable
// that start-up touched and steady state does not use.
//
// orch is one ~100 MB binary (kubectl is inside). Package initialisation runs
// code spread over all of it, and the kernel maps file pages around every
// fault, so right after start most of the executable is resident although
// the server then only runs a small part of it. Those pages are clean and
// read-only: dropping them from the page tables costs nothing but a page
// fault (from the page cache) when they are needed again, and the resident
// size then reflects the working set.
package memory

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ShedExecutablePages drops the resident pages of read-only mappings of this
// process's executable (text, rodata, pclntab) and returns how many bytes of
// mappings it advised. A mapping with any page that was ever written (such as
// relocations made read-only after the dynamic loader filled them in) is
// left alone: only clean file pages are dropped, and they read back the same.
func ShedExecutablePages() (int, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var clean []region
	var current *region
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		line := scanner.Text()
		if start, end, ok := readOnlyMappingOf(line, exe); ok {
			clean = append(clean, region{start: start, end: end})
			current = &clean[len(clean)-1]
			continue
		}
		if isMappingHeader(line) {
			current = nil
			continue
		}
		if current != nil && strings.HasPrefix(line, "Anonymous:") && strings.Fields(line)[1] != "0" {
			current.written = true
		}
	}
	if err := scanner.Err(); err != nil {
		return 0, err
	}
	total := 0
	for _, r := range clean {
		if r.written {
			continue
		}
		// The addresses come from the kernel, not from Go pointers: pass them
		// to madvise as they are.
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, r.start, r.end-r.start, unix.MADV_DONTNEED); errno != 0 {
			return total, fmt.Errorf("madvise %x-%x: %w", r.start, r.end, errno)
		}
		total += int(r.end - r.start)
	}
	return total, nil
}

// region is one mapping; written means some of its pages are private copies.
type region struct {
	start, end uintptr
	written    bool
}

// isMappingHeader is true for the first line of each mapping in smaps.
func isMappingHeader(line string) bool {
	fields := strings.Fields(line)
	return len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":")
}

// readOnlyMappingOf parses one /proc/self/maps line ("start-end perms offset
// dev inode path") and reports a mapping of path without write permission.
func readOnlyMappingOf(line, path string) (uintptr, uintptr, bool) {
	fields := strings.Fields(line)
	if len(fields) < 6 || fields[5] != path || strings.Contains(fields[1], "w") {
		return 0, 0, false
	}
	bounds := strings.SplitN(fields[0], "-", 2)
	if len(bounds) != 2 {
		return 0, 0, false
	}
	start, err1 := strconv.ParseUint(bounds[0], 16, 64)
	end, err2 := strconv.ParseUint(bounds[1], 16, 64)
	if err1 != nil || err2 != nil || end <= start {
		return 0, 0, false
	}
	return uintptr(start), uintptr(end), true
}
