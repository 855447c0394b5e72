package node

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"orch/internal/version"
)

// ReadSystem reads this machine's facts (everything of System but the
// runtime's version): CPUs, /proc/meminfo, statfs of dataDir, uname,
// /etc/os-release, /etc/machine-id and the boot ID. A missing machine-id
// or os-release is left empty; memory and storage are required.
func ReadSystem(dataDir string) (System, error) {
	sys := System{CPUs: runtime.NumCPU(), Arch: runtime.GOARCH, KubeletVersion: version.Kubernetes}
	mem, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return sys, fmt.Errorf("read the memory size: %w", err)
	}
	if sys.MemoryBytes, err = memTotal(mem); err != nil {
		return sys, err
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(dataDir, &fs); err != nil {
		return sys, fmt.Errorf("size of the file system of %q: %w", dataDir, err)
	}
	sys.StorageBytes = int64(fs.Blocks) * int64(fs.Bsize)
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		return sys, fmt.Errorf("uname: %w", err)
	}
	sys.KernelVersion = unix.ByteSliceToString(uts.Release[:])
	if data, err := os.ReadFile("/etc/os-release"); err == nil {
		sys.OSImage = prettyName(data)
	}
	if sys.OSImage == "" {
		sys.OSImage = "Linux"
	}
	sys.MachineID = readTrimmed("/etc/machine-id")
	sys.BootID = readTrimmed("/proc/sys/kernel/random/boot_id")
	return sys, nil
}

// memTotal is MemTotal of /proc/meminfo in bytes.
func memTotal(meminfo []byte) (int64, error) { return meminfoBytes(meminfo, "MemTotal") }

// prettyName is PRETTY_NAME of an os-release file.
func prettyName(osRelease []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(osRelease))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "PRETTY_NAME="); ok {
			if u, err := strconv.Unquote(v); err == nil {
				return u
			}
			return strings.Trim(v, `"'`)
		}
	}
	return ""
}

func readTrimmed(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}
