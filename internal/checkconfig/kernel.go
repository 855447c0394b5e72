package checkconfig

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"strings"
)

const (
	procConfig = "/proc/config.gz"
	osRelease  = "/proc/sys/kernel/osrelease"
)

// kernel is what the checks know of the running kernel.
type kernel struct {
	release string            // uname -r
	config  map[string]string // CONFIG_X -> "y", "m", ...; nil when no config was read
	source  string            // the file config came from
	tried   []string          // where config was looked for, when it was not found
	err     error             // why an explicit --kernel-config could not be read
	modules string            // modules.dep + modules.builtin of release ("" when unreadable)
}

// readKernel reads the kernel config from path, or when path is empty from
// /proc/config.gz or /boot/config-RELEASE, and the module lists of
// /lib/modules/RELEASE.
func readKernel(h Host, path string) kernel {
	var k kernel
	k.release, _ = readTrimmed(h, osRelease)
	if k.release != "" {
		for _, f := range []string{"modules.dep", "modules.builtin"} {
			if b, err := h.ReadFile("/lib/modules/" + k.release + "/" + f); err == nil {
				k.modules += string(b) + "\n"
			}
		}
	}
	if path != "" {
		k.config, k.err = readKernelConfig(h, path)
		k.source = path
		return k
	}
	candidates := []string{procConfig}
	if k.release != "" {
		candidates = append(candidates, "/boot/config-"+k.release)
	}
	for _, p := range candidates {
		if c, err := readKernelConfig(h, p); err == nil {
			k.config, k.source = c, p
			return k
		}
	}
	k.tried = candidates
	return k
}

// readKernelConfig parses a kernel .config, gzipped or not.
func readKernelConfig(h Host, path string) (map[string]string, error) {
	b, err := h.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r io.Reader = bytes.NewReader(b)
	if len(b) > 2 && b[0] == 0x1f && b[1] == 0x8b {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("%s looks gzipped but is not: %w", path, err)
		}
		r = zr
	}
	config := map[string]string{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if name, ok := strings.CutPrefix(line, "# "); ok {
			if name, ok = strings.CutSuffix(name, " is not set"); ok && strings.HasPrefix(name, "CONFIG_") {
				config[name] = "n"
			}
			continue
		}
		if name, value, ok := strings.Cut(line, "="); ok && strings.HasPrefix(name, "CONFIG_") {
			config[name] = strings.Trim(value, `"`)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(config) == 0 {
		return nil, fmt.Errorf("%s holds no CONFIG_ lines; is it a kernel config?", path)
	}
	return config, nil
}

// moduleAvailable reports whether module (e.g. "br_netfilter") is in the
// running kernel's modules.dep or modules.builtin.
func (k kernel) moduleAvailable(module string) bool {
	return module != "" && strings.Contains(k.modules, "/"+module+".ko")
}

// checkKernelConfig reports each kernel option orch needs: from the
// config when it was read, otherwise from what the running kernel shows.
func checkKernelConfig(h Host, k kernel) []Result {
	var head Result
	switch {
	case k.config != nil:
		head = Result{Name: "kernel config", Status: OK, Found: "read " + k.source + kernelSuffix(k)}
	case k.err != nil:
		head = Result{Name: "kernel config", Status: Missing, Found: "cannot read " + k.source + ": " + k.err.Error(),
			Fix: "give --kernel-config a readable kernel config (e.g. /boot/config-$(uname -r)), or leave the flag out to use /proc/config.gz"}
	default:
		head = Result{Name: "kernel config", Status: Warning, Found: "not found at " + strings.Join(k.tried, " or ") + kernelSuffix(k),
			Fix: "modprobe configs (it provides /proc/config.gz) or pass --kernel-config FILE; until then the options below are judged by what the running kernel shows"}
	}
	rs := []Result{head}
	for _, o := range kernelOptions {
		if k.config != nil {
			rs = append(rs, o.fromConfig(k.config))
		} else {
			rs = append(rs, o.observe(h, k))
		}
	}
	return rs
}

func kernelSuffix(k kernel) string {
	if k.release == "" {
		return ""
	}
	return " (kernel " + k.release + ")"
}
